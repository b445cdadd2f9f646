import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { principalOf } from "../server/auth.js";
import { responses } from "../server/problem-schema.js";
import { Uuid } from "../server/schemas.js";
import type { ReactorInvocation } from "./invoke.js";

const ReactBody = Type.Object(
  {
    args: Type.Optional(
      Type.Unknown({
        description:
          "Arguments for the reactor; `{{ <token id> }}` expressions anywhere in it are detokenized.",
      }),
    ),
  },
  { additionalProperties: false },
);

const ReactResponse = Type.Object({
  raw: Type.Optional(Type.Unknown({ description: "What the reactor returned as `raw`." })),
  tokens: Type.Optional(Type.Unknown({ description: "The reactor's `tokenize` output, tokenized." })),
});

export function reactRoutes(invocation: ReactorInvocation): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/reactors/:id/react",
      {
        config: { permission: "token:use" },
        schema: {
          tags: ["Reactors"],
          summary: "Invoke a reactor with detokenized arguments",
          params: Type.Object({ id: Uuid }),
          body: ReactBody,
          response: responses({ 200: ReactResponse }),
        },
      },
      async (request, reply) => {
        const answer = await invocation.react(principalOf(request), request.params.id, request.body);
        if (answer.kind === "result") return reply.send(answer.body);
        // A reactor's CustomHttpResponseError chooses the whole answer (wire-format §7).
        return (
          reply
            .code(answer.status)
            .headers(answer.headers)
            .type("application/json; charset=utf-8")
            // Already JSON text, of the reactor's own shape: outside the route's schema by design.
            .send(JSON.stringify(answer.body ?? null) as never)
        );
      },
    );
  };
}
