import { TesseraConnectionError, TesseraError, errorForResponse } from "./errors.js";
import {
  DEFAULT_RETRY_POLICY,
  RETRYABLE_STATUSES,
  parseRetryAfter,
  retryDelayMs,
  sleep,
  type RetryPolicy,
} from "./retry.js";

/** Kept in step with package.json by a test. */
export const SDK_VERSION = "0.1.0";
export const DEFAULT_USER_AGENT = `tessera-sdk/${SDK_VERSION}`;
export const DEFAULT_TIMEOUT_MS = 30_000;

export type Fetch = typeof globalThis.fetch;

/** How a TesseraClient reaches the server; its Transport sends every request with these. */
export interface TesseraClientOptions {
  /** Where the server listens, e.g. `https://vault.internal:8080`; a path prefix is kept. */
  baseUrl: string;
  /** Sent in the `SVC-API-KEY` header. */
  apiKey: string;
  /** Abort an attempt, response body included, after this long; default 30 000. Each retry gets its own. */
  timeoutMs?: number;
  /** Default `tessera-sdk/<version>`. */
  userAgent?: string;
  /** Default `globalThis.fetch`; pass one for runtimes without it (Node 16) or to instrument requests. */
  fetch?: Fetch;
  /**
   * How often an idempotent call (GET, PUT, DELETE, search, detokenize) answered with 429, 502, 503 or 504 is
   * sent again; default 2, 0 turns retries off. Other calls and other statuses are never retried.
   */
  maxRetries?: number;
  /** Scale of the full-jitter backoff: retry n waits a random time below `retryDelayMs · 2^n`; default 500. */
  retryDelayMs?: number;
  /** Cap on any wait between attempts, including one asked for by `Retry-After`; default 10 000. */
  maxRetryDelayMs?: number;
}

export interface WireRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: URLSearchParams;
  /** Already in wire form; sent as JSON. */
  body?: unknown;
  /** Default `application/json` when there is a body. */
  contentType?: string;
  /**
   * Whether sending the request twice has the effect of sending it once, which makes it safe to retry. GET, PUT
   * and DELETE are; a POST or PATCH only when it says so (the POSTs that only read, like search).
   */
  idempotent?: boolean;
}

interface Answer {
  status: number;
  text: string;
  retryAfter: string | null;
}

/**
 * HTTP exchanges with the server, in wire form (snake_case JSON in and out). Idempotent requests answered with
 * 429, 502, 503 or 504 are sent again after a jittered backoff (see retry.ts); nothing else is retried.
 */
export class Transport {
  readonly #baseUrl: string;
  // A private field, so that logging or inspecting a client does not print the key.
  readonly #apiKey: string;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  readonly #fetch: Fetch;
  readonly #retry: RetryPolicy;

  constructor(options: TesseraClientOptions) {
    if (typeof options.baseUrl !== "string" || !/^https?:\/\//i.test(options.baseUrl)) {
      throw new TypeError("baseUrl must be an http:// or https:// URL");
    }
    if (typeof options.apiKey !== "string" || options.apiKey.length === 0) {
      throw new TypeError("apiKey must be a non-empty string");
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new TypeError("timeoutMs must be a positive number");
    }
    const retry: RetryPolicy = {
      maxRetries: options.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
      baseDelayMs: options.retryDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs,
      maxDelayMs: options.maxRetryDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
    };
    if (!Number.isInteger(retry.maxRetries) || retry.maxRetries < 0) {
      throw new TypeError("maxRetries must be a whole number, 0 or more");
    }
    if (![retry.baseDelayMs, retry.maxDelayMs].every((ms) => Number.isFinite(ms) && ms >= 0)) {
      throw new TypeError("retryDelayMs and maxRetryDelayMs must be numbers, 0 or more");
    }
    // Possibly missing: Node 16 has a global fetch only behind a flag.
    const globalFetch: Fetch | undefined = globalThis.fetch;
    const fetch = options.fetch ?? globalFetch;
    if (fetch === undefined) {
      throw new TypeError("no global fetch (Node 18 or later has one): pass options.fetch");
    }

    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#timeoutMs = timeoutMs;
    this.#userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    // Called as a plain function: browsers reject `fetch` invoked with any `this` but the global object.
    this.#fetch = (input, init) => fetch(input, init);
    this.#retry = retry;
  }

  /** The parsed JSON body of a 2xx response, or undefined when it has none (204). */
  async send(request: WireRequest): Promise<unknown> {
    const idempotent = request.idempotent ?? ["GET", "PUT", "DELETE"].includes(request.method);
    for (let retry = 0; ; retry++) {
      const { status, text, retryAfter } = await this.#exchange(request);
      const parsed = parseJson(text);
      if (status >= 200 && status <= 299) {
        if (text.length === 0) return undefined;
        if (parsed === undefined) {
          throw new TesseraError(status, text, `HTTP ${status} with a body that is not JSON`);
        }
        return parsed;
      }
      const retryAfterSeconds = parseRetryAfter(retryAfter, Date.now());
      if (!idempotent || !RETRYABLE_STATUSES.has(status) || retry >= this.#retry.maxRetries) {
        throw errorForResponse(status, parsed ?? text, retryAfterSeconds);
      }
      await sleep(retryDelayMs(retry, this.#retry, retryAfterSeconds));
    }
  }

  /** One attempt: the response's status and whole body, or a TesseraConnectionError when none arrived in time. */
  async #exchange({ method, path, query, body, contentType }: WireRequest): Promise<Answer> {
    const search = query?.toString() ?? "";
    const url = `${this.#baseUrl}${path}${search.length > 0 ? `?${search}` : ""}`;
    const headers: Record<string, string> = { "SVC-API-KEY": this.#apiKey, "User-Agent": this.#userAgent };
    if (body !== undefined) headers["Content-Type"] = contentType ?? "application/json";

    const controller = new AbortController();
    // The timer covers the whole exchange, body included: a server that sends headers and then stalls still times out.
    const timer = setTimeout(() => controller.abort(), this.#timeoutMs);
    try {
      const response = await this.#fetch(url, {
        method,
        headers,
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: controller.signal,
        // A followed redirect would carry the API key to wherever the Location header says; a 3xx is an error.
        redirect: "manual",
      });
      const text = await response.text();
      return { status: response.status, text, retryAfter: response.headers.get("retry-after") };
    } catch (error) {
      const timedOut = controller.signal.aborted;
      const reason = timedOut ? `timed out after ${this.#timeoutMs} ms` : `failed: ${describe(error)}`;
      throw new TesseraConnectionError(`${method} ${url} ${reason}`, { cause: error, timedOut });
    } finally {
      clearTimeout(timer);
    }
  }
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, ...) is on its cause. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  return code === undefined ? error.message : `${error.message} (${code})`;
}
