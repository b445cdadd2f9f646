import { TesseraConnectionError, TesseraError } from "./errors.js";

/** Kept in step with package.json by a test. */
export const SDK_VERSION = "0.1.0";
export const DEFAULT_USER_AGENT = `tessera-sdk/${SDK_VERSION}`;
export const DEFAULT_TIMEOUT_MS = 30_000;

export type Fetch = typeof globalThis.fetch;

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs?: number;
  userAgent?: string;
  fetch?: Fetch;
}

export interface WireRequest {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  query?: URLSearchParams;
  /** Already in wire form; sent as JSON. */
  body?: unknown;
}

/**
 * One HTTP exchange with the server, in wire form (snake_case JSON in and out). Every request is tried once:
 * there are no retries in this version.
 */
export class Transport {
  readonly #baseUrl: string;
  // A private field, so that logging or inspecting a client does not print the key.
  readonly #apiKey: string;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  readonly #fetch: Fetch;

  constructor(options: TransportOptions) {
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
  }

  /** The parsed JSON body of a 2xx response, or undefined when it has none (204). */
  async send({ method, path, query, body }: WireRequest): Promise<unknown> {
    const search = query?.toString() ?? "";
    const url = `${this.#baseUrl}${path}${search.length > 0 ? `?${search}` : ""}`;
    const headers: Record<string, string> = { "SVC-API-KEY": this.#apiKey, "User-Agent": this.#userAgent };
    if (body !== undefined) headers["Content-Type"] = "application/json";

    const controller = new AbortController();
    // The timer covers the whole exchange, body included: a server that sends headers and then stalls still times out.
    const timer = setTimeout(() => controller.abort(), this.#timeoutMs);
    let status: number;
    let text: string;
    try {
      const response = await this.#fetch(url, {
        method,
        headers,
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: controller.signal,
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      const timedOut = controller.signal.aborted;
      const reason = timedOut ? `timed out after ${this.#timeoutMs} ms` : `failed: ${describe(error)}`;
      throw new TesseraConnectionError(`${method} ${url} ${reason}`, { cause: error, timedOut });
    } finally {
      clearTimeout(timer);
    }

    const parsed = parseJson(text);
    if (status < 200 || status > 299) throw new TesseraError(status, parsed ?? text);
    if (text.length === 0) return undefined;
    if (parsed === undefined) {
      throw new TesseraError(status, text, `HTTP ${status} with a body that is not JSON`);
    }
    return parsed;
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
