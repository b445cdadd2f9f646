import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { presentApplication } from "../applications/present.js";
import { principalOf } from "../server/auth.js";
import { responses } from "../server/problem-schema.js";
import {
  CreatedTenantSchema,
  CreateTenantBody,
  ShreddedTenantSchema,
  TenantParams,
  TenantSchema,
} from "./schemas.js";
import type { TenantService } from "./service.js";
import type { Tenant } from "./types.js";

const tags = ["Tenants"];

function presentTenant(tenant: Tenant) {
  return {
    id: tenant.id,
    name: tenant.name,
    ...(tenant.createdBy !== null && { created_by: tenant.createdBy }),
    created_at: tenant.createdAt,
  };
}

export function tenantRoutes(service: TenantService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/tenants",
      {
        config: { permission: "tenant:create" },
        schema: {
          tags,
          summary: "Create a tenant and its first management Application",
          description: "The new Application's key is in `application.key`, shown only in this response.",
          body: CreateTenantBody,
          response: responses({ 201: CreatedTenantSchema }),
        },
      },
      async (request, reply) => {
        const { tenant, application, key } = await service.create(principalOf(request), request.body);
        return reply
          .code(201)
          .send({ ...presentTenant(tenant), application: { ...presentApplication(application), key } });
      },
    );

    app.delete(
      "/tenants/:id",
      {
        config: { permission: "tenant:create" },
        schema: {
          tags,
          summary: "Shred a tenant: destroy its keys, so that nothing it stored can be decrypted again",
          description:
            "Crypto-shredding (docs/keys.md#shredding-a-tenant). Only the bootstrap tenant's management " +
            "Applications may, and not of the bootstrap tenant itself. The tenant's keys, tokens, reactors, " +
            "invocations, idempotent answers and Applications are deleted in one transaction; the tenant's id and " +
            "audit log remain, and the shredding is recorded in the bootstrap tenant's log.",
          params: TenantParams,
          response: responses({ 200: ShreddedTenantSchema }),
        },
      },
      async (request) => {
        const shredded = await service.shred(principalOf(request), request.params.id);
        return {
          id: shredded.id,
          shredded_at: shredded.shreddedAt,
          destroyed: shredded.destroyed,
          files_scrubbed: shredded.filesScrubbed,
        };
      },
    );

    app.get(
      "/tenants/self",
      {
        config: { permission: "tenant:read" },
        schema: { tags, summary: "Get the caller's tenant", response: responses({ 200: TenantSchema }) },
      },
      async (request) => presentTenant(await service.getOwn(principalOf(request))),
    );
  };
}
