import { TesseraClient, TesseraError, type Fetch } from "@tessera/sdk";
import type { Principal } from "../access/principal.js";
import type { ReadContext } from "../storage/database.js";
import { AppError, codeForStatus, type FieldErrors } from "../server/errors.js";
import type { Detokenizer } from "../tokens/bulk.js";
import type { InternalCredential, InternalCredentials } from "./internal-credentials.js";
import { callBt, isBtMethod } from "./bt-client.js";
import { checkCustomResponse, type CustomResponse } from "./custom-response.js";
import { checkReactorCode } from "./sandbox/code-check.js";
import type { NpmModule } from "./sandbox/modules.js";
import type { ThrownByReactor } from "./sandbox/frames.js";
import { reactorKey, workerKey, type ReactorRuntime } from "./runtime.js";
import type { RunnableReactor } from "./types.js";
import { PoolExhaustedError } from "./sandbox/pool.js";
import { ReactorLoadError, WorkerStartError } from "./sandbox/worker.js";

export interface ReactorInvocationDeps {
  readonly runtime: ReactorRuntime;
  /** Only detokenization: a reactor reaches tokens otherwise through the API, as its Application (svc). */
  readonly tokens: Detokenizer;
  readonly credentials: InternalCredentials;
  /** Reaches this server's own API in process (Fastify's inject), never over the network. */
  readonly fetch: Fetch;
  /** `configVersion`: the caller's, read when it was authenticated (ReadContext). */
  readonly loadReactor: (
    tenantId: string,
    id: string,
    configVersion?: number,
  ) => Promise<RunnableReactor | undefined>;
  /** The npm packages reactor code may require (TESSERA_REACTOR_MODULES); the default list when absent. */
  readonly modules?: readonly NpmModule[];
}

export type ReactAnswer =
  | { readonly kind: "result"; readonly body: { raw?: unknown; tokens?: unknown } }
  | ({ readonly kind: "custom" } & CustomResponse);

/** The `svc` methods reactor code may call (harness.js builds the same list into its stub); `bt`'s are in bt-client.ts. */
const RPC_METHODS = new Set([
  "tokens.create",
  "tokens.get",
  "tokens.list",
  "tokens.update",
  "tokens.delete",
  "tokens.search",
  "tokenize",
  "detokenize",
]);

/**
 * The error classes of wire-format §7, by which reactor code chooses a status, and that status; anything else
 * thrown is a 500. The status is the class's, never the `status` the thrown object carries: a subclass could
 * otherwise set 101 and take over the connection.
 */
const REACTOR_ERRORS = new Map([
  ["AuthenticationError", 401],
  ["AuthorizationError", 403],
  ["BadRequestError", 400],
  ["InvalidPaymentMethodError", 402],
  ["InvalidReactorConfigurationError", 400],
  ["RateLimitError", 429],
  ["ReactorRuntimeError", 500],
  ["ServiceUnavailableError", 503],
]);

const INTERNAL_BASE_URL = "http://tessera.internal";
const MODULES_CACHE_SIZE = 1_000;

export function createReactorInvocation(deps: ReactorInvocationDeps) {
  const modulesByVersion = new Map<string, readonly string[]>();

  function modulesOf(key: string, code: string): readonly string[] {
    const known = modulesByVersion.get(key);
    if (known !== undefined) return known;
    const check = deps.modules === undefined ? checkReactorCode(code) : checkReactorCode(code, deps.modules);
    // Saved code passed this check; code that no longer does (an allow-list narrowed since) cannot run.
    if (!check.ok) {
      throw new AppError(
        "reactor-failed",
        `The reactor's code no longer passes: ${check.problems[0]!.message}`,
      );
    }
    if (modulesByVersion.size >= MODULES_CACHE_SIZE) modulesByVersion.clear();
    modulesByVersion.set(key, check.modules);
    return check.modules;
  }

  /**
   * `svc` and `bt` for one invocation, acting as the reactor's Application. The credential and the client are
   * made on the first call: most invocations make none. `end` revokes the credential, once the invocation is over.
   */
  function svcActingAs(tenantId: string, applicationId: string) {
    let acting: { client: TesseraClient; credential: InternalCredential } | undefined;
    return {
      call(method: string, params: unknown[]): Promise<unknown> {
        if (acting === undefined) {
          const credential = deps.credentials.issue(tenantId, applicationId);
          acting = { credential, client: clientFor(credential.key) };
        }
        const { client, credential } = acting;
        if (isBtMethod(method)) {
          const post = (path: string, body: unknown) => postAs(credential.key, path, body);
          return callBt({ client, post }, method, params).catch(asBtError);
        }
        return callSvc(client, method, params);
      },
      end: () => acting?.credential.revoke(),
    };
  }

  function clientFor(key: string): TesseraClient {
    return new TesseraClient({ baseUrl: INTERNAL_BASE_URL, apiKey: key, fetch: deps.fetch, maxRetries: 0 });
  }

  /** A POST with the body and the answer as they are; an answer outside 2xx throws a TesseraError. */
  async function postAs(key: string, path: string, body: unknown): Promise<unknown> {
    const response = await deps.fetch(`${INTERNAL_BASE_URL}${path}`, {
      method: "POST",
      headers: { "SVC-API-KEY": key, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer: unknown = await response.json();
    if (!response.ok) throw new TesseraError(response.status, answer, response.statusText);
    return answer;
  }

  /** `tokenize` output, tokenized exactly like a POST /tokenize body by its creator. */
  async function tokenizeOutput(tenantId: string, creatorId: string, body: unknown): Promise<unknown> {
    const credential = deps.credentials.issue(tenantId, creatorId);
    try {
      return await postAs(credential.key, "/tokenize", body);
    } catch (error) {
      if (!(error instanceof TesseraError)) throw error;
      throw new AppError(
        codeForStatus(error.status),
        `The reactor's tokenize output was refused: ${error.message}`,
        error.errors,
      );
    } finally {
      credential.revoke();
    }
  }

  function callSvc(client: TesseraClient, method: string, params: unknown[]): Promise<unknown> {
    if (!RPC_METHODS.has(method)) return Promise.reject(new Error(`svc.${method} is not available`));
    const [group, name] = method.includes(".") ? method.split(".") : [undefined, method];
    const target = (group === undefined ? client : client[group as "tokens"]) as unknown as Record<
      string,
      (...args: unknown[]) => Promise<unknown>
    >;
    return target[name]!.call(target, ...params).catch((error: unknown) => {
      if (error instanceof TesseraError) {
        // What the worker hands reactor code: the API's answer, as the SDK would have raised it.
        throw Object.assign(new Error(error.message), { status: error.status, errors: error.errors });
      }
      throw error;
    });
  }

  /** The tenant's reactor with its configuration opened; 404 when the tenant has none of that id. */
  async function load(tenantId: string, reactorId: string, configVersion?: number): Promise<RunnableReactor> {
    const reactor = await deps.loadReactor(tenantId, reactorId, configVersion);
    if (reactor === undefined) throw AppError.notFound(`Reactor ${reactorId}`);
    return reactor;
  }

  /**
   * spec §4.3: `{{ <token id> }}` expressions in `args` replaced by the data, each under `token:use`; recorded in
   * the audit log as the reactor's use, with the tokens it got (none when there are no args).
   */
  async function detokenize(
    principal: Principal,
    args: unknown,
    recordAs: { action: "reactor.react" | "reactor.react_async"; reactorId: string },
    read: ReadContext = {},
  ): Promise<unknown> {
    const detokenized = await deps.tokens.detokenize(principal, args ?? {}, {
      permission: "token:use",
      recordAs,
      read,
    });
    return args === undefined ? {} : detokenized;
  }

  /**
   * Runs the code in its worker with `svc` acting as the reactor's Application, tokenizes what it asks to (as
   * the reactor's Application, else as `requesterId`), and maps what it threw. Shared by synchronous and
   * asynchronous invocations, which differ only in when this runs and where the answer goes.
   */
  async function execute(
    tenantId: string,
    requesterId: string,
    reactor: RunnableReactor,
    args: unknown,
    timeoutMs: number,
  ): Promise<ReactAnswer> {
    const version = reactorKey(reactor.id, reactor.version);
    const code = {
      key: workerKey(version, requesterId),
      code: reactor.code,
      modules: modulesOf(version, reactor.code),
    };

    const svc = reactor.applicationId === null ? undefined : svcActingAs(tenantId, reactor.applicationId);
    let outcome;
    try {
      outcome = await deps.runtime.invoke(code, {
        args,
        configuration: reactor.configuration,
        svc: svc !== undefined,
        timeoutMs,
        onRpc: (method, params) =>
          svc === undefined ? Promise.reject(new Error("svc is null")) : svc.call(method, params),
      });
    } catch (error) {
      throw startFailure(error, deps.runtime.scrub);
    } finally {
      svc?.end();
    }

    switch (outcome.kind) {
      case "returned": {
        const { raw, tokenize } = outcome.value;
        const creator = reactor.applicationId ?? requesterId;
        const tokens = tokenize === undefined ? undefined : await tokenizeOutput(tenantId, creator, tokenize);
        return {
          kind: "result",
          body: { ...(raw !== undefined && { raw }), ...(tokens !== undefined && { tokens }) },
        };
      }
      case "threw":
        return thrownAnswer(outcome.error, deps.runtime.scrub);
      case "timed-out":
        throw new AppError("reactor-timeout", `The reactor did not finish within ${timeoutMs} ms.`);
      case "crashed":
        throw new AppError("reactor-failed", `The reactor failed: ${outcome.reason}.`);
    }
  }

  return {
    load,
    detokenize,
    execute,

    /** POST /reactors/{id}/react, synchronously, with the server's reactor timeout. */
    async react(
      principal: Principal,
      reactorId: string,
      body: { args?: unknown },
      read: ReadContext = {},
    ): Promise<ReactAnswer> {
      const reactor = await load(principal.tenantId, reactorId, read.versions?.config);
      const args = await detokenize(principal, body.args, { action: "reactor.react", reactorId }, read);
      return execute(principal.tenantId, principal.application.id, reactor, args, deps.runtime.timeoutMs);
    },
  };
}

export type ReactorInvocation = ReturnType<typeof createReactorInvocation>;

/**
 * What `bt` code catches: basis-theory-js raises a `BasisTheoryApiError` with the HTTP `status` and the problem
 * body as `data`; `errors` as `svc` gives it.
 */
function asBtError(error: unknown): never {
  if (error instanceof TesseraError) {
    throw Object.assign(new Error(error.message), {
      name: "BasisTheoryApiError",
      status: error.status,
      data: error.body,
      ...(error.errors !== undefined && { errors: error.errors }),
    });
  }
  throw error;
}

function startFailure(error: unknown, scrub: (text: string) => string): unknown {
  if (error instanceof PoolExhaustedError) {
    return new AppError("unavailable", "Every reactor worker is busy; retry the request.");
  }
  if (error instanceof ReactorLoadError) {
    return new AppError(
      "reactor-failed",
      `The reactor's code failed to load: ${scrub(error.thrown.message)}`,
    );
  }
  if (error instanceof WorkerStartError) {
    return new AppError("reactor-failed", `The reactor could not start: ${error.message}.`);
  }
  return error;
}

/** What reactor code threw, as the answer wire-format §7 describes. */
function thrownAnswer(thrown: ThrownByReactor, scrub: (text: string) => string): ReactAnswer {
  if (thrown.name === "CustomHttpResponseError") {
    const check = checkCustomResponse(thrown);
    if (check.ok) return { kind: "custom", ...check.response };
    throw new AppError(
      "reactor-error",
      "The reactor's custom response was refused",
      scrubErrors(check.errors, scrub),
      500,
    );
  }
  const classStatus = REACTOR_ERRORS.get(thrown.name);
  const errors = normalizeErrors(thrown.errors ?? (classStatus === undefined ? thrown.message : undefined));
  throw new AppError(
    "reactor-error",
    scrub(classStatus === undefined ? "Reactor Runtime Error" : thrown.message),
    scrubErrors(errors, scrub),
    classStatus ?? 500,
  );
}

const FALLBACK_MESSAGE =
  "Something went wrong. Please try again. If the problem persists, please contact support.";

/** `errors` normalised as Basis Theory's formulas SDK does (wire-format §7). */
export function normalizeErrors(errors: unknown): FieldErrors {
  if (errors === undefined || errors === null || errors === "") return { error: [FALLBACK_MESSAGE] };
  if (typeof errors === "string") return { error: [errors] };
  if (Array.isArray(errors)) return { error: errors.map(text) };
  if (typeof errors === "object") {
    const normalized: FieldErrors = {};
    for (const [field, value] of Object.entries(errors)) {
      Object.defineProperty(normalized, field, {
        value: Array.isArray(value) ? value.map(text) : [text(value)],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return normalized;
  }
  return { error: [text(errors)] };
}

function text(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
}

function scrubErrors(errors: FieldErrors, scrub: (text: string) => string): FieldErrors {
  const scrubbed: FieldErrors = {};
  for (const [field, messages] of Object.entries(errors)) {
    Object.defineProperty(scrubbed, field, {
      value: messages.map(scrub),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return scrubbed;
}
