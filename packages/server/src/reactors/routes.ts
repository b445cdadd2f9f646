import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { presentApplication } from "../applications/present.js";
import { principalOf } from "../server/auth.js";
import { AppError } from "../server/errors.js";
import { pageRequest, presentPage } from "../server/pagination.js";
import { responses } from "../server/problem-schema.js";
import { presentReactor } from "./present.js";
import {
  CreateReactorBody,
  CreatedReactorSchema,
  ListReactorsQuery,
  PatchReactorBody,
  ReactorIdParams,
  ReactorPage,
  ReactorSchema,
  UpdateReactorBody,
} from "./schemas.js";
import type { ReactorInput, ReactorService } from "./service.js";

const tags = ["Reactors"];
const MERGE_PATCH = "application/merge-patch+json";

/** Basis Theory SDKs may send null for `application` (wire-format §1, §7): none. */
function toInput(body: CreateReactorBody): ReactorInput {
  return {
    name: body.name,
    code: body.code,
    configuration: body.configuration,
    applicationId: body.application?.id ?? null,
  };
}

export function reactorRoutes(service: ReactorService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addContentTypeParser(MERGE_PATCH, { parseAs: "string" }, app.getDefaultJsonParser("error", "error"));

    app.post(
      "/reactors",
      {
        config: { permission: "reactor:create" },
        schema: {
          tags,
          summary: "Create a reactor",
          description: "The one response that includes the reactor's Application (without its key).",
          body: CreateReactorBody,
          response: responses({ 201: CreatedReactorSchema }),
        },
      },
      async (request, reply) => {
        const { reactor, application } = await service.create(principalOf(request), toInput(request.body));
        return reply.code(201).send({
          ...presentReactor(reactor),
          ...(application !== null && { application: presentApplication(application) }),
        });
      },
    );

    app.get(
      "/reactors",
      {
        config: { permission: "reactor:read" },
        schema: {
          tags,
          summary: "List reactors",
          querystring: ListReactorsQuery,
          response: responses({ 200: ReactorPage }),
        },
      },
      async (request) => {
        const { id, name } = request.query;
        const page = await service.list(
          principalOf(request),
          { ids: id ?? [], ...(name !== undefined && { name }) },
          pageRequest(request.query),
        );
        return presentPage(page, presentReactor);
      },
    );

    app.get(
      "/reactors/:id",
      {
        config: { permission: "reactor:read" },
        schema: {
          tags,
          summary: "Get a reactor",
          params: ReactorIdParams,
          response: responses({ 200: ReactorSchema }),
        },
      },
      async (request) => presentReactor(await service.get(principalOf(request), request.params.id)),
    );

    app.put(
      "/reactors/:id",
      {
        config: { permission: "reactor:update" },
        schema: {
          tags,
          summary: "Replace a reactor",
          params: ReactorIdParams,
          body: UpdateReactorBody,
          response: responses({ 200: ReactorSchema }),
        },
      },
      async (request) =>
        presentReactor(await service.replace(principalOf(request), request.params.id, toInput(request.body))),
    );

    app.patch(
      "/reactors/:id",
      {
        config: { permission: "reactor:update" },
        schema: {
          tags,
          summary: "Update a reactor (JSON merge patch)",
          description: `Content-Type must be ${MERGE_PATCH}; any other is answered with 415.`,
          params: ReactorIdParams,
          body: PatchReactorBody,
          response: responses({ 204: Type.Null({ description: "Updated." }) }),
        },
        preValidation: async (request) => {
          if (request.headers["content-type"]?.split(";", 1)[0]?.trim().toLowerCase() !== MERGE_PATCH) {
            throw new AppError("unsupported-media-type", `Send the patch as ${MERGE_PATCH} (RFC 7386).`);
          }
        },
      },
      async (request, reply) => {
        const { body } = request;
        await service.patch(principalOf(request), request.params.id, {
          ...(body.name !== undefined && { name: body.name }),
          ...(body.code !== undefined && { code: body.code }),
          ...(body.configuration !== undefined && { configuration: body.configuration }),
          ...(body.application !== undefined && { applicationId: body.application?.id ?? null }),
        });
        return reply.code(204).send(null);
      },
    );

    app.delete(
      "/reactors/:id",
      {
        config: { permission: "reactor:delete" },
        schema: {
          tags,
          summary: "Delete a reactor",
          params: ReactorIdParams,
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
