import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { applicationRoutes } from "./applications/routes.js";
import type { ApplicationService } from "./applications/service.js";
import { auditRoutes } from "./audit/routes.js";
import { registerConsole } from "./console/routes.js";
import { elementsRoutes, type ElementsRoutesOptions } from "./elements/routes.js";
import { explainRoutes } from "./explain/routes.js";
import type { ExplainService } from "./explain/service.js";
import { registerIdempotency } from "./idempotency/hooks.js";
import type { Idempotency } from "./idempotency/service.js";
import type { AuditService } from "./audit/service.js";
import type { LimitsConfig } from "./limits/settings.js";
import { healthRoutes, type Readiness } from "./health/routes.js";
import { registerLimits, trustProxyOption } from "./limits/register.js";
import { registerMetrics, type MetricsEndpoint } from "./observability/routes.js";
import { echoTraceId, traceIdOf } from "./server/trace-id.js";
import type { InternalCredentials } from "./reactors/internal-credentials.js";
import type { InvocationService } from "./reactors/invocations/service.js";
import type { ReactorInvocation } from "./reactors/invoke.js";
import { reactRoutes } from "./reactors/react-routes.js";
import { reactorRoutes } from "./reactors/routes.js";
import type { ReactorService } from "./reactors/service.js";
import { tenantRoutes } from "./tenants/routes.js";
import type { TenantService } from "./tenants/service.js";
import { tokenRoutes } from "./tokens/routes.js";
import type { TokenService } from "./tokens/service.js";
import { registerCors, type CorsSettings } from "./server/cors.js";
import { sessionRoutes } from "./sessions/routes.js";
import type { SessionService } from "./sessions/service.js";
import { webhookRoutes } from "./webhooks/routes.js";
import type { WebhookSecrets } from "./webhooks/secrets.js";
import { registerAuth } from "./server/auth.js";
import { answerClientError } from "./server/client-error.js";
import { registerErrorHandling, sendError } from "./server/error-handler.js";
import { AppError } from "./server/errors.js";
import { createAjv } from "./server/validation.js";

export interface AppDeps {
  readonly applications: ApplicationService;
  readonly reactors: ReactorService;
  /** Runs reactors (reactors/invoke.ts) for synchronous invocations. */
  readonly invocation: ReactorInvocation;
  /** Asynchronous invocations: enqueued here, run and delivered by the background work of main.ts. */
  readonly invocations: InvocationService;
  /** Keys the server issues to itself for a reactor's `svc` calls, accepted beside Applications' keys. */
  readonly credentials: InternalCredentials;
  readonly webhookSecrets: WebhookSecrets;
  /** GET /logs. */
  readonly audit: AuditService;
  /** SVC-IDEMPOTENCY-KEY on the routes that create (docs/idempotency.md). */
  readonly idempotency: Idempotency;
  readonly tenants: TenantService;
  readonly tokens: TokenService;
  /** POST /sessions, /sessions/authorize, and session keys beside Applications' keys. */
  readonly sessions: SessionService;
  /** Browser callers of the routes public and session keys use (docs/sessions.md#cors); absent: CORS off. */
  readonly cors?: CorsSettings;
  /** POST /access/explain. */
  readonly explain: ExplainService;
  readonly readiness: Readiness;
  readonly bodyLimit: number;
  /** Rate limits, bounded concurrency, load shedding (docs/limits.md); absent: none. */
  readonly limits?: LimitsConfig;
  /** The hosted fields' files under /elements/ (docs/elements.md); absent when the package is not built. */
  readonly elements?: ElementsRoutesOptions;
  /** The web console's built files (console/routes.ts); absent when it is off (TESSERA_CONSOLE_ENABLED). */
  readonly console?: { readonly root: string | undefined };
  /** GET /metrics and the request timings behind it; absent when metrics are off (TESSERA_METRICS). */
  readonly metrics?: MetricsEndpoint;
  /** `false` for silence (tests). */
  readonly logger: FastifyBaseLogger | false;
}

/** Room for caller-chosen token ids (up to 400 characters) in a path segment. */
const MAX_PATH_PARAM_LENGTH = 500;

/** Builds the application without listening, so tests and `main.ts` share exactly the same wiring. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger === false ? { logger: false } : { loggerInstance: deps.logger }),
    bodyLimit: deps.bodyLimit,
    ...(deps.limits !== undefined && { trustProxy: trustProxyOption(deps.limits) }),
    // The caller's SVC-TRACE-ID when it is safe, else a UUID: on every log line (`reqId`) and every answer.
    genReqId: traceIdOf,
    // Basis Theory SDKs call `/tokens/` and `/applications/` (wire-format §1).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: (error, request, reply) => {
      void sendError(error, request, reply);
      // The router's own refusals skip every hook, the timing one included; they take no time worth measuring.
      deps.metrics?.metrics.observeRequest(request.method, undefined, reply.statusCode, 0);
    },
    // Fastify's own drain answer is not problem+json; the hook below gives the same 503 in our format.
    return503OnClosing: false,
    // What Node's HTTP parser refuses (a CR, LF or NUL in a header, headers over 16 KiB, a bad request line or
    // Content-Length) is answered as problem+json too, quoting nothing of the request.
    clientErrorHandler(this: FastifyInstance, error, socket) {
      answerClientError(error, socket, this.log);
    },
    // Node answers an HTTP/1.1 request without Host with a bare 400 of its own; the hook below gives it ours.
    http: { requireHostHeader: false },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // RFC 9112 §3.2: an HTTP/1.1 request must name its host.
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.raw.httpVersion !== "1.1" || request.headers.host !== undefined) return done();
    done(new AppError("malformed-request", "An HTTP/1.1 request must carry a Host header."));
  });

  let draining = false;
  app.addHook("preClose", (done) => {
    draining = true;
    done();
  });

  const bodyAjv = createAjv("body");
  const textAjv = createAjv("text");
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === "body" ? bodyAjv : textAjv).compile(schema),
  );

  // Requests still arriving on kept-alive connections during shutdown go elsewhere (a load balancer retries).
  app.addHook("onRequest", (_request, reply, done) => {
    if (!draining) return done();
    void reply.header("connection", "close");
    done(new AppError("unavailable", "The server is shutting down; retry the request."));
  });

  // JSON only: anything else is a 415 rather than a string handed to a schema expecting an object.
  app.removeContentTypeParser("text/plain");
  // A bodiless POST is not a malformed one whatever it is labelled: basis-theory-js regenerates keys with an
  // empty body typed application/x-www-form-urlencoded (wire-format §1). Without a content type Fastify skips
  // parsing, and a route that needs a body still rejects the missing one in validation.
  app.addHook("onRequest", (request, _reply, done) => {
    const headers = request.raw.headers;
    const length = headers["content-length"];
    if (length === "0" || (length === undefined && headers["transfer-encoding"] === undefined)) {
      delete headers["content-type"];
    }
    done();
  });
  registerErrorHandling(app);
  echoTraceId(app);
  if (deps.metrics !== undefined) registerMetrics(app, deps.metrics);

  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Tessera",
        version: "0.1.0",
        description: "A self-hostable tokenization vault. Errors are RFC 9457 problem+json documents.",
      },
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "SVC-API-KEY" },
          // What Basis Theory's SDKs send (docs/compatibility.md); either header, never two different keys.
          btApiKey: { type: "apiKey", in: "header", name: "BT-API-KEY" },
        },
      },
      security: [{ apiKey: [] }, { btApiKey: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
  // Before the API scope's hooks, so that a refusal (401, 429…) of an allowed origin is readable by its page.
  if (deps.cors !== undefined && deps.cors.origins.length > 0) await registerCors(app, deps.cors);

  app.get("/openapi.json", { schema: { hide: true } }, () => Promise.resolve(app.swagger()));
  await app.register(healthRoutes(deps.readiness));
  // Static and keyless: outside the API's authentication and rate limits.
  if (deps.elements !== undefined) await app.register(elementsRoutes(deps.elements));
  if (deps.console !== undefined) await registerConsole(app, deps.console.root);

  await app.register(async (api) => {
    if (deps.limits !== undefined) registerLimits(api, deps.limits);
    // Reactors' svc calls come back in through the API as the reactor's Application (reactors/invoke.ts).
    registerAuth(api, deps.credentials.authenticator(deps.sessions.authenticator(deps.applications)));
    registerIdempotency(api, deps.idempotency);
    await api.register(applicationRoutes(deps.applications));
    await api.register(reactorRoutes(deps.reactors));
    await api.register(reactRoutes(deps.invocation, deps.invocations));
    await api.register(tenantRoutes(deps.tenants));
    await api.register(tokenRoutes(deps.tokens));
    await api.register(webhookRoutes(deps.webhookSecrets));
    await api.register(auditRoutes(deps.audit));
    await api.register(explainRoutes(deps.explain));
    await api.register(sessionRoutes(deps.sessions));
  });

  return app;
}
