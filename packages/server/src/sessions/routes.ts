import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { principalOf } from "../server/auth.js";
import { responses } from "../server/problem-schema.js";
import { AuthorizeSessionBody, SessionSchema } from "./schemas.js";
import type { SessionService } from "./service.js";

const tags = ["Sessions"];

export function sessionRoutes(service: SessionService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/sessions",
      {
        // Any public key, whatever it holds: the session is worth nothing until a backend authorizes it.
        config: { keyType: "public" },
        schema: {
          tags,
          summary: "Create a session (with a public key)",
          response: responses({ 201: SessionSchema }),
        },
      },
      async (request, reply) => {
        const created = await service.create(principalOf(request));
        return reply.code(201).send({
          session_key: created.sessionKey,
          nonce: created.nonce,
          expires_at: created.expiresAt,
        });
      },
    );

    app.post(
      "/sessions/authorize",
      {
        config: { keyType: "private" },
        schema: {
          tags,
          summary: "Authorize a session (with a private key)",
          body: AuthorizeSessionBody,
          // wire-format §6: 200 with an empty body.
          response: responses({ 200: Type.Unsafe<undefined>({ description: "Authorized; no body." }) }),
        },
      },
      async (request, reply) => {
        const { body } = request;
        await service.authorize(principalOf(request), {
          nonce: body.nonce,
          ...(body.expires_at !== undefined && { expiresAt: body.expires_at }),
          permissions: body.permissions ?? [],
          rules: body.rules ?? [],
        });
        return reply.code(200).send(undefined);
      },
    );
  };
}
