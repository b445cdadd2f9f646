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
