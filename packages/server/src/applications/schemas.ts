import { Type, type Static } from "typebox";
import { APPLICATION_TYPES, PERMISSIONS } from "../access/permissions.js";
import { CONDITION_ATTRIBUTES, CONDITION_OPERATORS, TRANSFORMS } from "../access/rules.js";
import { PageOf, PageParams } from "../server/pagination.js";
import { OrNull, StringEnum, Timestamp, Uuid } from "../server/schemas.js";
const Name = Type.String({ minLength: 1, maxLength: 200 });

export const PermissionSchema = StringEnum(PERMISSIONS, {
  description: "A permission; which ones an Application may hold depends on its type.",
});

const Condition = Type.Object({
  attribute: StringEnum(CONDITION_ATTRIBUTES),
  operator: StringEnum(CONDITION_OPERATORS),
  value: Type.String({ maxLength: 400 }),
});

export const AccessRuleSchema = Type.Object({
  description: Type.Optional(Type.String({ maxLength: 1000 })),
  priority: Type.Integer({ minimum: 1, maximum: 1_000_000, description: "Lower values take precedence." }),
  container: Type.Optional(
    Type.String({ minLength: 1, maxLength: 400, description: "A path such as /pci/high/." }),
  ),
  conditions: Type.Optional(Type.Array(Condition, { maxItems: 20 })),
  transform: StringEnum(TRANSFORMS),
  permissions: Type.Array(PermissionSchema, { maxItems: 50 }),
});

const ApplicationType = StringEnum(APPLICATION_TYPES);
const Permissions = Type.Array(PermissionSchema, { maxItems: 50 });
const Rules = Type.Array(AccessRuleSchema, { maxItems: 100 });

const applicationFields = {
  id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  type: ApplicationType,
  permissions: Permissions,
  rules: Rules,
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
  expires_at: Type.Optional(Timestamp),
};

/** Response allow-list: without `key`, so no handler can leak one by accident. */
export const ApplicationSchema = Type.Object(applicationFields);
export const ApplicationWithKeySchema = Type.Object({
  ...applicationFields,
  key: Type.String({ description: "The API key; shown only in this response." }),
});

// null is the default, as absent is (wire-format §1: Nulls): no permissions, no rules, no expiry.
const GrantedPermissions = Type.Optional(
  OrNull(Permissions, "Permissions granted; absent or null for none."),
);
const GrantedRules = Type.Optional(
  OrNull(Rules, "Access rules, tried by priority; absent or null for none."),
);

export const CreateApplicationBody = Type.Object({
  name: Name,
  type: ApplicationType,
  permissions: GrantedPermissions,
  rules: GrantedRules,
  expires_at: Type.Optional(
    OrNull(
      Type.String({ format: "date-time" }),
      "When the Application is deleted; absent or null for never.",
    ),
  ),
});
export type CreateApplicationBody = Static<typeof CreateApplicationBody>;

export const UpdateApplicationBody = Type.Object({
  name: Name,
  permissions: GrantedPermissions,
  rules: GrantedRules,
});
export type UpdateApplicationBody = Static<typeof UpdateApplicationBody>;

export const ApplicationIdParams = Type.Object({ id: Uuid });

export const ListApplicationsQuery = Type.Object({
  id: Type.Optional(Type.Array(Uuid, { maxItems: 100, description: "Repeat to filter by several ids." })),
  ...PageParams,
});

export const ApplicationPage = PageOf(ApplicationSchema);

export const ListPermissionsQuery = Type.Object({
  application_type: Type.Optional(ApplicationType),
});

/** wire-format §5: `{type, description, application_types}`. */
export const PermissionEntry = Type.Object({
  type: PermissionSchema,
  description: Type.String(),
  application_types: Type.Array(ApplicationType),
});
