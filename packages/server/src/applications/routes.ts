import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { permissionCatalog } from "../access/permissions.js";
import { ANY_APPLICATION, principalOf } from "../server/auth.js";
import { pageRequest, presentPage } from "../server/pagination.js";
import { responses } from "../server/problem-schema.js";
import { presentApplication } from "./present.js";
import {
  ApplicationIdParams,
  ApplicationPage,
  ApplicationSchema,
  ApplicationWithKeySchema,
  CreateApplicationBody,
  ListApplicationsQuery,
  ListPermissionsQuery,
  PermissionEntry,
  UpdateApplicationBody,
} from "./schemas.js";
import type { ApplicationService } from "./service.js";

const tags = ["Applications"];

export function applicationRoutes(service: ApplicationService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/applications",
      {
        config: { permission: "application:create", idempotent: true },
        schema: {
          tags,
          summary: "Create an Application",
          body: CreateApplicationBody,
          response: responses({ 201: ApplicationWithKeySchema }),
        },
      },
      async (request, reply) => {
        const { body } = request;
        const { application, key } = await service.create(principalOf(request), {
          name: body.name,
          type: body.type,
          permissions: body.permissions ?? [],
          rules: body.rules ?? [],
          ...(body.expires_at != null && { expiresAt: body.expires_at }),
        });
        return reply.code(201).send({ ...presentApplication(application), key });
      },
    );

    app.get(
      "/applications",
      {
        config: { permission: "application:read" },
        schema: {
          tags,
          summary: "List Applications",
          querystring: ListApplicationsQuery,
          response: responses({ 200: ApplicationPage }),
        },
      },
      async (request) => {
        const page = await service.list(
          principalOf(request),
          { ids: request.query.id ?? [] },
          pageRequest(request.query),
        );
        return presentPage(page, presentApplication);
      },
    );

    app.get(
      "/applications/key",
      {
        config: { permission: "application:read" },
        schema: {
          tags,
          summary: "Get the Application of the calling key",
          response: responses({ 200: ApplicationSchema }),
        },
      },
      (request) => Promise.resolve(presentApplication(principalOf(request).application)),
    );

    app.get(
      "/applications/:id",
      {
        config: { permission: "application:read" },
        schema: {
          tags,
          summary: "Get an Application",
          params: ApplicationIdParams,
          response: responses({ 200: ApplicationSchema }),
        },
      },
      async (request) => presentApplication(await service.get(principalOf(request), request.params.id)),
    );

    app.put(
      "/applications/:id",
      {
        config: { permission: "application:update" },
        schema: {
          tags,
          summary: "Update an Application",
          description: "The type cannot be changed.",
          params: ApplicationIdParams,
          body: UpdateApplicationBody,
          response: responses({ 200: ApplicationSchema }),
        },
      },
      async (request) => {
        const { body } = request;
        const updated = await service.update(principalOf(request), request.params.id, {
          name: body.name,
          permissions: body.permissions ?? [],
          rules: body.rules ?? [],
        });
        return presentApplication(updated);
      },
    );

    app.post(
      "/applications/:id/regenerate",
      {
        config: { permission: "application:update" },
        schema: {
          tags,
          summary: "Regenerate an Application's key",
          description: "The previous key stops working immediately.",
          params: ApplicationIdParams,
          response: responses({ 200: ApplicationWithKeySchema }),
        },
      },
      async (request) => {
        const { application, key } = await service.regenerateKey(principalOf(request), request.params.id);
        return { ...presentApplication(application), key };
      },
    );

    app.get(
      "/permissions",
      {
        config: { permission: ANY_APPLICATION },
        schema: {
          tags,
          summary: "List the permissions, with the Application types that may hold each",
          description:
            "Any valid key may read the catalog (it is the same for every caller). `application_type` keeps " +
            "the permissions that type may hold.",
          querystring: ListPermissionsQuery,
          response: responses({ 200: Type.Array(PermissionEntry) }),
        },
      },
      async (request) =>
        permissionCatalog(request.query.application_type).map((entry) => ({
          type: entry.permission,
          description: entry.description,
          application_types: entry.applicationTypes,
        })),
    );

    app.delete(
      "/applications/:id",
      {
        config: { permission: "application:delete" },
        schema: {
          tags,
          summary: "Delete an Application",
          params: ApplicationIdParams,
          response: responses({ 204: Type.Null({ description: "Deleted." }) }),
        },
      },
      async (request, reply) => {
        await service.delete(principalOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
