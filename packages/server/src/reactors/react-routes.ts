import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { principalOf, readContextOf } from "../server/auth.js";
import { AppError } from "../server/errors.js";
import { ProblemSchema, responses } from "../server/problem-schema.js";
import { StringEnum, Timestamp, Uuid } from "../server/schemas.js";
import { OrNull } from "../server/schemas.js";
import { absentBodyIsEmpty } from "../server/validation.js";
import { MAX_CALLBACK_URL_LENGTH } from "../webhooks/callback-url.js";
import type { ReactorInvocation } from "./invoke.js";
import { presentInvocation } from "./invocations/present.js";
import type { InvocationService } from "./invocations/service.js";

/** spec §4.3 / §8: the default, and the range allowed, of an asynchronous invocation's timeout. */
export const ASYNC_TIMEOUT_MS = { default: 10_000, min: 10_000, max: 210_000 } as const;

const ReactBody = Type.Object(
  {
    args: Type.Optional(
      Type.Unknown({
        description:
          "Arguments for the reactor; detokenization expressions anywhere in it (`{{ <token id> }}`, " +
          "`{{ token: <token id> }}`, each optionally followed by filters) are detokenized. Absent or null: `{}`.",
      }),
    ),
    callback_url: Type.Optional(
      OrNull(
        Type.String({ minLength: 1, maxLength: MAX_CALLBACK_URL_LENGTH }),
        "Makes the invocation asynchronous: answered 202 at once, its outcome POSTed to this http(s) URL as " +
          "a signed Standard Webhooks message. Private, loopback and link-local targets are refused. Absent " +
          "or null: synchronous.",
      ),
    ),
    callbackUrl: Type.Optional(
      OrNull(Type.String({ minLength: 1, maxLength: MAX_CALLBACK_URL_LENGTH }), {
        deprecated: true,
        description:
          "The same as `callback_url`, in the spelling Basis Theory's JavaScript SDK sends (wire-format §7). " +
          "Giving both with different values is a 400.",
      }),
    ),
    timeout_ms: Type.Optional(
      OrNull(
        Type.Integer({ minimum: ASYNC_TIMEOUT_MS.min, maximum: ASYNC_TIMEOUT_MS.max }),
        `Asynchronous invocations only: how long the reactor may run; absent or null for ${ASYNC_TIMEOUT_MS.default}.`,
      ),
    ),
  },
  { additionalProperties: false },
);

const ReactResponse = Type.Object({
  raw: Type.Optional(Type.Unknown({ description: "What the reactor returned as `raw`." })),
  tokens: Type.Optional(Type.Unknown({ description: "The reactor's `tokenize` output, tokenized." })),
});

const AcceptedInvocation = Type.Object({
  id: Uuid,
  status: StringEnum(["pending"]),
});

const InvocationSchema = Type.Object({
  id: Uuid,
  reactor_id: Uuid,
  status: StringEnum(["pending", "running", "completed", "failed"]),
  callback_url: Type.String(),
  timeout_ms: Type.Integer(),
  run_attempts: Type.Integer({
    description: "Runs started; more than one after an instance stopped mid-run.",
  }),
  created_at: Timestamp,
  started_at: Type.Optional(Timestamp),
  finished_at: Type.Optional(Timestamp),
  result: Type.Optional(ReactResponse),
  response: Type.Optional(
    Type.Object(
      {
        status: Type.Integer(),
        headers: Type.Record(Type.String(), Type.String()),
        body: Type.Unknown(),
      },
      { description: "The HTTP answer the reactor chose (CustomHttpResponseError)." },
    ),
  ),
  error: Type.Optional(ProblemSchema),
  delivery: Type.Optional(
    Type.Object({
      status: StringEnum(["pending", "delivered", "failed"]),
      attempts: Type.Array(
        Type.Object({
          attempt: Type.Integer(),
          attempted_at: Timestamp,
          duration_ms: Type.Integer(),
          response_status: Type.Optional(Type.Integer()),
          error: Type.Optional(Type.String()),
        }),
      ),
      next_attempt_at: Type.Optional(Timestamp),
      delivered_at: Type.Optional(Timestamp),
    }),
  ),
});

const tags = ["Reactors"];

export function reactRoutes(
  invocation: ReactorInvocation,
  invocations: InvocationService,
): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/reactors/:id/react",
      {
        config: { permission: "token:use", concurrency: "reacts", idempotent: true },
        schema: {
          tags,
          summary: "Invoke a reactor with detokenized arguments",
          description:
            "Synchronous without `callback_url` (200 with the result); asynchronous with it (202 with the " +
            "invocation's id; the outcome is delivered as a signed webhook). An asynchronous call beyond the " +
            "tenant's bound of unsettled invocations (TESSERA_ASYNC_MAX_QUEUED_PER_TENANT) is a 429 with Retry-After.",
          params: Type.Object({ id: Uuid }),
          body: ReactBody,
          response: responses({ 200: ReactResponse, 202: AcceptedInvocation }),
        },
        preValidation: absentBodyIsEmpty,
      },
      async (request, reply) => {
        const principal = principalOf(request);
        // null is each field's default, as absent is (wire-format §1: Nulls).
        const args = request.body.args ?? undefined;
        const timeoutMs = request.body.timeout_ms ?? undefined;
        const callbackUrl = callbackUrlOf(request.body);
        if (callbackUrl !== undefined) {
          const accepted = await invocations.enqueue(
            principal,
            request.params.id,
            {
              ...(args !== undefined && { args }),
              callbackUrl,
              timeoutMs: timeoutMs ?? ASYNC_TIMEOUT_MS.default,
            },
            readContextOf(request),
          );
          return reply.code(202).send(accepted);
        }
        if (timeoutMs !== undefined) {
          throw AppError.validation({
            timeout_ms: ["is supported only for asynchronous invocations (with callback_url)"],
          });
        }
        const answer = await invocation.react(
          principal,
          request.params.id,
          { ...(args !== undefined && { args }) },
          readContextOf(request),
        );
        if (answer.kind === "result") return reply.send(answer.body);
        // A reactor's CustomHttpResponseError chooses the answer (wire-format §7), within what
        // custom-response.ts lets it: a final status, and headers that describe the body.
        void reply.code(answer.status);
        if (!("body" in answer)) return reply.headers(answer.headers).send(undefined as never);
        return (
          reply
            // The reactor's own Content-Type, when it gives one, is a JSON type too.
            .type("application/json; charset=utf-8")
            .headers(answer.headers)
            // Already JSON text, of the reactor's own shape: outside the route's schema by design.
            .send(JSON.stringify(answer.body ?? null) as never)
        );
      },
    );

    app.get(
      "/reactors/:id/invocations/:invocation_id",
      {
        config: { permission: "token:use" },
        schema: {
          tags,
          summary: "Get an asynchronous invocation: its state, outcome and webhook deliveries",
          description: "Visible only to the Application that made the invocation.",
          params: Type.Object({ id: Uuid, invocation_id: Uuid }),
          response: responses({ 200: InvocationSchema }),
        },
      },
      async (request) =>
        presentInvocation(
          await invocations.get(principalOf(request), request.params.id, request.params.invocation_id),
        ),
    );
  };
}

/** `callback_url`, or its camelCase spelling; both at once must agree. */
function callbackUrlOf(body: {
  callback_url?: string | null;
  callbackUrl?: string | null;
}): string | undefined {
  const snake = body.callback_url ?? undefined;
  const camel = body.callbackUrl ?? undefined;
  if (snake !== undefined && camel !== undefined && snake !== camel) {
    throw AppError.validation({ callbackUrl: ["differs from callback_url; send one of them"] });
  }
  return snake ?? camel;
}
