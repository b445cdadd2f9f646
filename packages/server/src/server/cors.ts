import cors, { type FastifyCorsOptions } from "@fastify/cors";
import type { FastifyInstance, FastifyRequest } from "fastify";

/** Browser callers (docs/sessions.md#cors). */
export interface CorsSettings {
  /** Exact origins (`scheme://host[:port]`) whose pages may call the browser routes; empty: CORS off. */
  readonly origins: readonly string[];
  /** How long a browser may cache a preflight answer. */
  readonly maxAgeSeconds: number;
}

/**
 * The routes a public or session key calls from a page (issue 19): creating tokens and sessions, reading a token
 * and searching. Management and private-key routes get no CORS headers at all, so no page can call them with a
 * key it somehow holds. Paths are matched as the router does: a trailing slash is the same route.
 */
const BROWSER_ROUTES: readonly { readonly method: string; readonly path: RegExp }[] = [
  { method: "POST", path: /^\/tokens\/?$/ },
  { method: "POST", path: /^\/tokenize\/?$/ },
  { method: "POST", path: /^\/sessions\/?$/ },
  { method: "POST", path: /^\/tokens\/search\/?$/ },
  { method: "GET", path: /^\/tokens\/[^/]+\/?$/ },
];

/** What a page may send: the key (either header name), JSON, and the optional headers the SDKs add. */
const ALLOWED_HEADERS = [
  "Content-Type",
  "SVC-API-KEY",
  "BT-API-KEY",
  "SVC-TRACE-ID",
  "BT-TRACE-ID",
  "SVC-IDEMPOTENCY-KEY",
  "BT-IDEMPOTENCY-KEY",
];

function browserCallable(request: FastifyRequest): boolean {
  const preflight = request.method === "OPTIONS";
  const method = preflight ? request.headers["access-control-request-method"] : request.method;
  if (typeof method !== "string") return false;
  const path = request.url.split("?", 1)[0] ?? "";
  return BROWSER_ROUTES.some((route) => route.method === method.toUpperCase() && route.path.test(path));
}

/**
 * CORS for browser callers (docs/sessions.md#cors), with @fastify/cors deciding per request: the configured exact
 * origins, on the browser routes only. No credentials (cookies) are involved: the key travels in a header, and
 * `Access-Control-Allow-Origin` names the one origin that asked, never `*`. Anything else gets no CORS header,
 * which the browser enforces by refusing the page the answer (and a preflight of it is a 404).
 */
export async function registerCors(app: FastifyInstance, settings: CorsSettings): Promise<void> {
  const allowed = new Set(settings.origins);
  const options: FastifyCorsOptions = {
    origin: false,
    methods: ["GET", "POST"],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: ["Retry-After", "SVC-TRACE-ID"],
    maxAge: settings.maxAgeSeconds,
    credentials: false,
    strictPreflight: true,
    hideOptionsRoute: true,
  };
  await app.register(cors, {
    delegator: (request, callback) => {
      const origin = request.headers.origin;
      const open = typeof origin === "string" && allowed.has(origin) && browserCallable(request);
      callback(null, open ? { ...options, origin } : options);
    },
  });
}
