import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { presentApplication } from "../applications/present.js";
import { principalOf } from "../server/auth.js";
import { responses } from "../server/problem-schema.js";
import { CreatedTenantSchema, CreateTenantBody, TenantSchema } from "./schemas.js";
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
