import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import { countDataTerms } from "../search/shape.js";
import { principalOf, readContextOf } from "../server/auth.js";
import { AppError } from "../server/errors.js";
import { hasControlCharacter } from "../shared/text.js";
import { DEFAULT_PAGE_SIZE, pageRequest, presentCursorPage, presentPage } from "../server/pagination.js";
import { responses } from "../server/problem-schema.js";
import { absentBodyIsEmpty, createValidator } from "../server/validation.js";
import { presentToken } from "./present.js";
import {
  CreateTokenBody,
  ListTokensQuery,
  ListTokensV2Query,
  PatchTokenBody,
  SearchTokensBody,
  SearchTokensV2Body,
  TokenCursorPage,
  TokenIdParams,
  TokenPage,
  TokenSchema,
} from "./schemas.js";
import type { CreateTokenInput } from "./draft.js";
import type { TokenService } from "./service.js";

const tags = ["Tokens"];
const MERGE_PATCH = "application/merge-patch+json";
const AnyJson = Type.Unknown({ description: "Any JSON value." });

function toCreateInput(body: CreateTokenBody): CreateTokenInput {
  return {
    data: body.data,
    ...(body.id !== undefined && { id: body.id }),
    ...(body.type !== undefined && { type: body.type }),
    ...(body.metadata !== undefined && { metadata: body.metadata }),
    ...(body.search_indexes !== undefined && { searchIndexes: body.search_indexes }),
    ...(body.fingerprint_expression !== undefined && { fingerprintExpression: body.fingerprint_expression }),
    ...(body.mask !== undefined && { mask: body.mask }),
    ...(body.deduplicate_token !== undefined && { deduplicateToken: body.deduplicate_token }),
    // null is the default, never expiring, as absent is (wire-format §1: Nulls).
    ...(body.expires_at != null && { expiresAt: body.expires_at }),
    ...(body.containers !== undefined && { containers: body.containers }),
  };
}

/** The v2 list's `metadata`: JSON text of an object of strings, as Basis Theory's node-sdk sends it. */
function metadataFilter(text: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const entries =
    typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? Object.entries(parsed)
      : undefined;
  if (
    entries === undefined ||
    entries.some(
      ([key, value]) => key === "" || typeof value !== "string" || hasControlCharacter(key + value),
    )
  ) {
    throw AppError.validation({
      metadata: ['must be a JSON object of non-empty keys to strings, such as {"region":"eu"}'],
    });
  }
  return Object.fromEntries(entries);
}

const validateNestedCreate = createValidator<CreateTokenBody>(CreateTokenBody);

/** Each token request inside a tokenize body passes the same schema as `POST /tokens`. */
function parseNestedCreate(node: unknown, at: string): CreateTokenInput {
  const result = validateNestedCreate(node, at);
  if ("errors" in result) throw AppError.validation(result.errors);
  return toCreateInput(result.value);
}

/**
 * These bodies are any JSON, so the result can be a bare string, which Fastify would otherwise send as
 * text/plain without quotes.
 */

function sendJson(reply: FastifyReply, value: unknown): FastifyReply {
  return reply.type("application/json; charset=utf-8").send(JSON.stringify(value));
}

export function tokenRoutes(service: TokenService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addContentTypeParser(MERGE_PATCH, { parseAs: "string" }, app.getDefaultJsonParser("error", "error"));

    app.post(
      "/tokens",
      {
        config: { permission: "token:create", idempotent: true },
        schema: {
          tags,
          summary: "Create a token",
          body: CreateTokenBody,
          response: responses({ 201: TokenSchema }),
        },
      },
      async (request, reply) => {
        const view = await service.create(principalOf(request), toCreateInput(request.body));
        return reply.code(201).send(presentToken(view));
      },
    );

    app.get(
      "/tokens",
      {
        config: { permission: "token:read" },
        schema: {
          tags,
          summary: "List tokens",
          querystring: ListTokensQuery,
          response: responses({ 200: TokenPage }),
        },
      },
      async (request) => {
        const metadata = Object.entries(request.query as Record<string, unknown>)
          .filter(([key]) => key.startsWith("metadata."))
          .flatMap(([key, value]) =>
            (Array.isArray(value) ? value : [value]).map(
              (v) => [key.slice("metadata.".length), String(v)] as const,
            ),
          );
        if (metadata.some(([key, value]) => key === "" || hasControlCharacter(key + value))) {
          throw AppError.validation({
            metadata: ["metadata filters are written metadata.<key>=<value>, without control characters"],
          });
        }
        const page = await service.list(
          principalOf(request),
          {
            ids: request.query.id ?? [],
            metadata,
            ...(request.query.type !== undefined && { type: request.query.type }),
          },
          pageRequest(request.query),
        );
        return presentPage(page, presentToken);
      },
    );

    app.post(
      "/tokens/search",
      {
        config: {
          permission: "token:search",
          concurrency: "searches",
          dataTerms: (body) => countDataTerms((body as SearchTokensBody).query),
        },
        preValidation: absentBodyIsEmpty,
        schema: {
          tags,
          summary: "Search tokens",
          description:
            "Results are ordered by created_at descending, then id; each token's data is shown through the " +
            "caller's rule for token:search. New tokens are searchable as soon as their create returns. " +
            "The data: terms an API key may search are limited per minute (429 with Retry-After).",
          body: SearchTokensBody,
          response: responses({ 200: TokenPage }),
        },
      },
      async (request) => {
        const page = await service.search(
          principalOf(request),
          request.body.query ?? "",
          pageRequest(request.body),
        );
        return presentPage(page, presentToken);
      },
    );

    app.get(
      "/v2/tokens",
      {
        config: { permission: "token:read" },
        schema: {
          tags,
          summary: "List tokens, walked by cursor (Basis Theory's v2 list)",
          description:
            "Newest first (created_at descending, then id). `pagination.next` is an opaque cursor bound to this " +
            "tenant, key's Application and filters: send it back as `start` for the next page; it is null on the " +
            "last. A token created or deleted during the walk never makes another appear twice or go missing.",
          querystring: ListTokensV2Query,
          response: responses({ 200: TokenCursorPage }),
        },
      },
      async (request) => {
        const { type, container, fingerprint, metadata, start, size } = request.query;
        const page = await service.listV2(
          principalOf(request),
          {
            ...(type !== undefined && { type }),
            ...(container !== undefined && { container }),
            ...(fingerprint !== undefined && { fingerprint }),
            ...(metadata !== undefined && { metadata: metadataFilter(metadata) }),
          },
          { ...(start !== undefined && { start }), size: size ?? DEFAULT_PAGE_SIZE },
        );
        return presentCursorPage(page, presentToken);
      },
    );

    app.post(
      "/v2/tokens/search",
      {
        config: {
          permission: "token:search",
          concurrency: "searches",
          dataTerms: (body) => countDataTerms((body as SearchTokensV2Body).query),
        },
        preValidation: absentBodyIsEmpty,
        schema: {
          tags,
          summary: "Search tokens, walked by cursor (Basis Theory's v2 search)",
          description:
            "The whole query language of POST /tokens/search (a superset of Basis Theory's v2), with the same " +
            "rules and order; pages are walked with the opaque `pagination.next` cursor sent back as `start`, " +
            "which is bound to this tenant, key's Application and query. An absent body is `{}`.",
          body: SearchTokensV2Body,
          response: responses({ 200: TokenCursorPage }),
        },
      },
      async (request) => {
        const { body } = request;
        const page = await service.searchV2(principalOf(request), body.query ?? "", {
          ...(body.start != null && { start: body.start }),
          size: body.size ?? DEFAULT_PAGE_SIZE,
        });
        return presentCursorPage(page, presentToken);
      },
    );

    app.get(
      "/tokens/:id",
      {
        config: { permission: "token:read" },
        schema: {
          tags,
          summary: "Get a token",
          params: TokenIdParams,
          response: responses({ 200: TokenSchema }),
        },
      },
      async (request) =>
        presentToken(await service.get(principalOf(request), request.params.id, readContextOf(request))),
    );

    app.patch(
      "/tokens/:id",
      {
        config: { permission: "token:update" },
        schema: {
          tags,
          summary: "Update a token (JSON merge patch)",
          description:
            "Content-Type must be application/merge-patch+json; data, metadata and mask are merged. Changing " +
            "mask, search_indexes or fingerprint_expression needs token:read through a rule that reveals the " +
            "token (else 403); the answer shows the data through the caller's token:read rule.",
          params: TokenIdParams,
          body: PatchTokenBody,
          response: responses({ 200: TokenSchema }),
        },
        preValidation: async (request) => {
          if (request.headers["content-type"]?.split(";", 1)[0]?.trim().toLowerCase() !== MERGE_PATCH) {
            throw new AppError("unsupported-media-type", `Send the patch as ${MERGE_PATCH} (RFC 7386).`);
          }
        },
      },
      async (request) => {
        const { body } = request;
        const view = await service.update(
          principalOf(request),
          request.params.id,
          {
            ...(body.data !== undefined && { data: body.data }),
            ...(body.metadata !== undefined && { metadata: body.metadata }),
            ...(body.search_indexes !== undefined && { searchIndexes: body.search_indexes }),
            ...(body.fingerprint_expression !== undefined && {
              fingerprintExpression: body.fingerprint_expression,
            }),
            ...(body.mask !== undefined && { mask: body.mask }),
            ...(body.expires_at !== undefined && { expiresAt: body.expires_at }),
            ...(body.containers !== undefined && { containers: body.containers }),
          },
          readContextOf(request),
        );
        return presentToken(view);
      },
    );

    app.delete(
      "/tokens/:id",
      {
        config: { permission: "token:delete" },
        schema: {
          tags,
          summary: "Delete a token",
          params: TokenIdParams,
          response: responses({ 204: Type.Null({ description: "Deleted." }) }),
        },
      },
      async (request, reply) => {
        await service.delete(principalOf(request), request.params.id, readContextOf(request));
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/tokenize",
      {
        config: { permission: "token:create", idempotent: true },
        schema: {
          tags,
          summary: "Tokenize many values at once, keeping the request's shape",
          body: AnyJson,
          response: responses({ 200: AnyJson }),
        },
      },
      async (request, reply) =>
        sendJson(
          reply,
          await service.tokenize(principalOf(request), request.body, {
            parse: parseNestedCreate,
            present: presentToken,
          }),
        ),
    );

    app.post(
      "/detokenize",
      {
        config: { permission: "token:read" },
        schema: {
          tags,
          summary:
            "Replace {{ <token id> }} and {{ token: <token id> }} expressions, with filters, by what the caller may read",
          body: AnyJson,
          response: responses({ 200: AnyJson }),
        },
      },
      async (request, reply) =>
        sendJson(
          reply,
          await service.detokenize(principalOf(request), request.body, { read: readContextOf(request) }),
        ),
    );
  };
}
