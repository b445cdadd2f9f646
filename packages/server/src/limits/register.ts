import { Socket } from "node:net";
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  preHandlerHookHandler,
  RouteHandlerMethod,
} from "fastify";
import type { ConcurrencyLimit, LimitsConfig, PressureLimits } from "./settings.js";
import { AppError } from "../server/errors.js";
import { addressKey } from "../net/address.js";
import { monitorPressure } from "./pressure.js";
import { createSemaphore, type Semaphore } from "./semaphore.js";
import { createTokenBuckets, type Rate, type TokenBuckets } from "./token-bucket.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Runs the handler under this bounded-concurrency limit (limits/, docs/limits.md). */
    concurrency?: "searches" | "reacts";
    /**
     * How many `data:` terms the request's (validated) body searches for: charged to the caller's data-term
     * limit before the handler runs (docs/limits.md#data-search-terms).
     */
    dataTerms?: (body: unknown) => number;
  }
}

/** A slot frees as soon as one request in flight ends. */
const QUEUE_RETRY_AFTER_S = 1;
/** Pressure is sampled once a second, and saturation rarely clears within one sample. */
const PRESSURE_RETRY_AFTER_S = 5;
const PRESSURE_SAMPLE_MS = 1_000;

/**
 * Installs every limit on the API scope; call it before `registerAuth`, so that what needs no principal runs
 * first (shedding load, refusing a flooding address) and costs no key lookup:
 *
 * 1. under pressure (event loop delay for a few seconds, heap, RSS; limits/pressure.ts): 503 `overloaded`;
 * 2. per source address, and failed authentications per address: 429 `rate-limited`;
 * 3. (authentication, at onRequest)
 * 4. per API key, at preParsing (after every onRequest hook, before the body is read): 429 `rate-limited`;
 * 5. `data:` search terms per API key, at preHandler (once the body is validated) for the routes whose
 *    `config.dataTerms` counts them: 429 `rate-limited`;
 * 6. bounded concurrency for the routes whose `config.concurrency` names a limit: 503 `overloaded`.
 *
 * Health probes, the documentation and unknown routes are outside the API scope and so never limited.
 */
export function registerLimits(api: FastifyInstance, config: LimitsConfig): void {
  registerPressure(api, config.pressure);
  registerRateLimits(api, config);
  registerDataTermLimit(api, config);
  registerConcurrency(api, config);
}

function registerPressure(api: FastifyInstance, limits: PressureLimits): void {
  const monitor = monitorPressure(limits, PRESSURE_SAMPLE_MS);
  if (monitor === undefined) return;
  api.addHook("onClose", (_instance, done) => {
    monitor.stop();
    done();
  });
  let shedding: string | undefined;
  api.addHook("onRequest", (request, reply, done) => {
    const reason = monitor.reason;
    if (reason !== shedding) {
      if (reason === undefined)
        request.log.warn({ was: shedding }, "no longer under pressure: serving again");
      else request.log.warn({ reason }, "under pressure: answering API requests 503 until it passes");
      shedding = reason;
    }
    if (reason === undefined) return done();
    void reply.header("retry-after", String(PRESSURE_RETRY_AFTER_S));
    done(new AppError("overloaded", `The server is overloaded (${reason}); retry later.`));
  });
}

function registerRateLimits(api: FastifyInstance, config: LimitsConfig): void {
  const buckets = (rate: Rate | undefined): TokenBuckets | undefined =>
    rate && createTokenBuckets(rate, config.maxEntries);
  const perAddress = buckets(config.perAddress);
  const authFailures = buckets(config.authFailures);
  const perKey = buckets(config.perKey);
  const perPublicKey = buckets(config.perPublicKey);
  const perSession = buckets(config.perSession);

  if (perAddress !== undefined || authFailures !== undefined) {
    // Hooks that never wait take Fastify's callback rather than returning a promise: they run on every request.
    api.addHook("onRequest", (request, reply, done) => {
      if (!fromNetwork(request)) return done();
      const address = addressKey(request.ip);
      const failures = authFailures?.check(address);
      if (failures?.allowed === false) {
        return done(rateLimited(reply, failures.retryAfterMs, "failed authentications from this address"));
      }
      const taken = perAddress?.take(address);
      if (taken?.allowed === false)
        return done(rateLimited(reply, taken.retryAfterMs, "requests from this address"));
      done();
    });
  }
  if (authFailures !== undefined) {
    // Only the authentication hook answers 401 before a principal is set; a reactor's own 401 comes after.
    api.addHook("onResponse", (request, reply, done) => {
      if (reply.statusCode === 401 && request.principal === null && fromNetwork(request)) {
        authFailures.take(addressKey(request.ip));
      }
      done();
    });
  }
  if (perKey !== undefined || perPublicKey !== undefined || perSession !== undefined) {
    api.addHook("preParsing", (request, reply, payload, done) => {
      // Keyed by Application or session id, never by the key itself: a heap dump holds no credential. A key
      // that lives in browsers has its own limit (docs/limits.md#browser-keys).
      const principal = request.principal;
      if (principal === null) return done(null, payload);
      const [limit, id] =
        principal.session !== undefined
          ? [perSession, principal.session.id]
          : principal.application.type === "public"
            ? [perPublicKey, principal.application.id]
            : [perKey, principal.application.id];
      const taken = limit?.take(id);
      if (taken?.allowed === false)
        return done(rateLimited(reply, taken.retryAfterMs, "requests with this API key"));
      done(null, payload);
    });
  }
}

/**
 * Each `data:` term of a search is one guess at a value: with a search index over a short value (an SSN's last
 * four digits, a date of birth), a key that may search could otherwise try every candidate. Charged per term, so
 * that one query ORing 64 guesses costs 64; charged per Application, wherever the request comes from (a
 * reactor's `svc` included). A query that does not parse counts 0: it is refused before anything is searched.
 */
function registerDataTermLimit(api: FastifyInstance, config: LimitsConfig): void {
  if (config.dataTerms === undefined) return;
  const buckets = createTokenBuckets(config.dataTerms, config.maxEntries);
  // A hook of the searching routes alone, run before the routes' own preHandler hooks as an instance hook was.
  api.addHook("onRoute", (route) => {
    const count = route.config?.dataTerms;
    if (count === undefined) return;
    const charge: preHandlerHookHandler = (request, reply, done) => {
      const terms = count(request.body);
      // A session's guesses are counted apart from its authorizer's, so that one page cannot spend the backend's.
      const holder = request.principal?.session?.id ?? request.principal?.application.id;
      if (terms === 0 || holder === undefined) return done();
      const taken = buckets.take(holder, terms);
      if (!taken.allowed)
        return done(rateLimited(reply, taken.retryAfterMs, "data: search terms with this API key"));
      done();
    };
    const own = route.preHandler === undefined ? [] : [route.preHandler].flat();
    route.preHandler = [charge, ...own];
  });
}

/**
 * A reactor's `svc` calls come back in through Fastify's inject, whose fake socket says 127.0.0.1: they are
 * limited per key (as the reactor's Application) and by concurrency, but not as one shared loopback address.
 */
function fromNetwork(request: FastifyRequest): boolean {
  return request.raw.socket instanceof Socket;
}

function rateLimited(reply: FastifyReply, retryAfterMs: number, what: string): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  void reply.header("retry-after", String(seconds));
  return new AppError("rate-limited", `Too many ${what}; retry after ${seconds} s.`);
}

function registerConcurrency(api: FastifyInstance, config: LimitsConfig): void {
  const semaphore = (limit: ConcurrencyLimit): Semaphore =>
    createSemaphore({ ...limit, timeoutMs: config.queueTimeoutMs });
  const semaphores = { searches: semaphore(config.searches), reacts: semaphore(config.reacts) };
  const names = { searches: "searches", reacts: "reactor invocations" };

  api.addHook("onRoute", (route) => {
    const which = route.config?.concurrency;
    if (which === undefined) return;
    const handler = route.handler;
    const wrapped: RouteHandlerMethod = async function (this: FastifyInstance, request, reply) {
      const acquired = await semaphores[which].acquire(() => goneSignal(reply));
      if (!acquired.acquired) {
        void reply.header("retry-after", String(QUEUE_RETRY_AFTER_S));
        throw new AppError("overloaded", `Too many ${names[which]} in progress; retry later.`);
      }
      try {
        return await handler.call(this, request, reply);
      } finally {
        acquired.release();
      }
    };
    route.handler = wrapped;
  });
}

/**
 * Aborts when the client goes away before the answer is sent, so that nobody waits for it in a queue. `close`
 * also comes after every answer that was sent, when nothing waits any more: aborting then would only build an
 * AbortError with its stack trace on every request.
 */
function goneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort(CLIENT_GONE);
  });
  return controller.signal;
}

const CLIENT_GONE = new Error("the client closed the connection before the answer was sent");

/** Fastify's `trustProxy` option from the configuration (docs/limits.md#behind-a-proxy). */
export function trustProxyOption(
  config: LimitsConfig,
): boolean | string[] | ((address: string, hop: number) => boolean) {
  const trust = config.trustProxy;
  // A hop count, as Fastify itself turns one into proxy-addr's trust function (its types omit numbers).
  if (typeof trust === "number") return (_address, hop) => hop < trust;
  return typeof trust === "boolean" ? trust : [...trust];
}
