import { Type } from "typebox";
import { ApplicationWithKeySchema } from "../applications/schemas.js";
import { Timestamp, Uuid } from "../server/schemas.js";

const tenantFields = {
  id: Uuid,
  name: Type.String(),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
};

export const TenantSchema = Type.Object(tenantFields);

export const CreatedTenantSchema = Type.Object({
  ...tenantFields,
  application: ApplicationWithKeySchema,
});

export const CreateTenantBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) });

export const TenantParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const ShreddedTenantSchema = Type.Object({
  id: Type.String(),
  shredded_at: Timestamp,
  destroyed: Type.Object(
    {
      tenant_keys: Type.Integer(),
      tokens: Type.Integer(),
      reactors: Type.Integer(),
      reactor_invocations: Type.Integer(),
      idempotency_keys: Type.Integer(),
      applications: Type.Integer(),
    },
    { description: "Rows deleted, by table. The tenant row and its audit log remain." },
  ),
  files_scrubbed: Type.Boolean({
    description:
      "Whether the store's files hold no copy of the deleted rows: true on SQLite once its WAL is truncated; " +
      "false on PostgreSQL, whose dead rows stay until VACUUM reuses their space (docs/keys.md#shredding-a-tenant).",
  }),
});
