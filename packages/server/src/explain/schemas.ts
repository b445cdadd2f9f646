import { Type, type Static } from "typebox";
import { APPLICATION_TYPES, TOKEN_PERMISSIONS } from "../access/permissions.js";
import { AccessRuleSchema } from "../applications/schemas.js";
import { MAX_CONTAINERS } from "../tokens/schemas.js";
import { NO_CONTROL_CHARACTERS, StringEnum, Uuid } from "../server/schemas.js";

// The subject is named by a field of its own (`application_id`, `session_id`) rather than a bare `id`, so that
// each kind of key holder keeps its meaning.
export const ExplainBody = Type.Object(
  {
    application_id: Type.Optional(
      Type.String({ format: "uuid", description: "The Application whose decision to explain." }),
    ),
    session_id: Type.Optional(
      Type.String({
        format: "uuid",
        description:
          "Instead of application_id: a session (its id is the entity_id of its session.create and " +
          "session.authorize audit entries), decided as its key would be now, within its authorizing Application.",
      }),
    ),
    permission: StringEnum(TOKEN_PERMISSIONS, { description: "The token permission to decide." }),
    token_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 400,
        pattern: NO_CONTROL_CHARACTERS,
        description: "A token of the tenant: its containers are used. Give this or `containers`.",
      }),
    ),
    containers: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 400 }), {
        minItems: 1,
        maxItems: MAX_CONTAINERS,
        description: "The containers of a token, existing or not. Give this or `token_id`.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ExplainBody = Static<typeof ExplainBody>;

const RuleRef = Type.Object(
  {
    source: StringEnum(["rule", "permission"] as const, {
      description:
        "`rule`: one of the Application's rules; `permission`: a top-level permission, which acts as a rule " +
        "over every container, tried after all the rules.",
    }),
    index: Type.Optional(
      Type.Integer({ description: "The rule's index in the Application's `rules` (source `rule`)." }),
    ),
    priority: Type.Optional(Type.Integer({ description: "Source `rule` only." })),
    description: Type.Optional(Type.String()),
    container: Type.Optional(Type.String()),
    conditions: AccessRuleSchema.properties.conditions,
    transform: AccessRuleSchema.properties.transform,
    permissions: AccessRuleSchema.properties.permissions,
  },
  { description: "An access rule as the decision tried it." },
);

const PassedOver = Type.Object({
  ...RuleRef.properties,
  reason: StringEnum(["conditions", "permission", "container"] as const, {
    description:
      "`conditions`: not every condition of the rule (a session's) holds for the token; `permission`: the rule lacks " +
      "the permission; `container`: its container covers none of the token's containers.",
  }),
  detail: Type.String({ description: "The reason in words." }),
});

const ContainerCheck = Type.Object({
  container: Type.String(),
  allowed: Type.Boolean(),
  decided_by: Type.Optional(RuleRef),
});

const CeilingSchema = Type.Object(
  {
    allowed: Type.Boolean(),
    transform: Type.Optional(StringEnum(["redact", "mask", "reveal"] as const)),
    decided_by: Type.Optional(RuleRef),
    passed_over: Type.Array(PassedOver),
  },
  {
    description:
      "Sessions only, when one of the session's rules decided: the same walk over the authorizing " +
      "Application's rules, which must decide too; the session is shown no more than they show.",
  },
);

export const ExplanationSchema = Type.Object({
  application: Type.Object(
    { id: Uuid, name: Type.String(), type: StringEnum(APPLICATION_TYPES) },
    { description: "The Application explained; for a session, the one that authorized it." },
  ),
  session_id: Type.Optional(Uuid),
  permission: StringEnum(TOKEN_PERMISSIONS),
  token_id: Type.Optional(Type.String()),
  containers: Type.Array(Type.String(), {
    description: "The token's containers, or those given (normalised to lower case).",
  }),
  allowed: Type.Boolean(),
  transform: Type.Optional(
    StringEnum(["redact", "mask", "reveal"] as const, {
      description: "How the token's data is shown or used under the deciding rule.",
    }),
  ),
  decided_by: Type.Optional(RuleRef),
  ceiling: Type.Optional(CeilingSchema),
  passed_over: Type.Array(PassedOver, {
    description:
      "Every rule tried before the deciding one, in precedence order; all of them when none decides.",
  }),
  each_container: Type.Optional(
    Type.Array(ContainerCheck, {
      description:
        "token:create and token:update only: writing a token into containers needs a rule holding the " +
        "permission on each of them.",
    }),
  ),
  summary: Type.String({ description: "The decision in one sentence." }),
});
export type ExplanationWire = Static<typeof ExplanationSchema>;
