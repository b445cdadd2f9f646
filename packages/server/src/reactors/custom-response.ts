import { addError, type FieldErrors } from "../server/errors.js";

/**
 * What a reactor's `CustomHttpResponseError` may put on Tessera's own HTTP answer (docs/reactors.md, "Custom
 * responses"). Reactor code is tenant code, and the answer goes out on Tessera's connection and origin: it may
 * choose a final status and describe its JSON body, never steer the connection (1xx), send the client elsewhere
 * (3xx, `Location`, `Refresh`), set state in the caller's browser (`Set-Cookie`), or change the origin's security
 * policy (CORS, HSTS, CSP and the like) or tell a proxy in front of Tessera what to do (`X-Accel-Redirect`).
 */
export interface CustomResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Absent for 204 and 205, which carry no content. */
  readonly body?: unknown;
}

/** Headers a reactor may set besides `X-` ones: they describe the body, nothing else. */
const ALLOWED_HEADERS = new Set(["content-type", "cache-control", "content-language"]);

/**
 * `X-` headers that are not the reactor's to set: browsers' security switches, and directives that servers and
 * proxies in front of Tessera act on (an internal redirect, a file sent from their disk, a rewritten request).
 */
const REFUSED_X_HEADERS = new Set([
  "x-frame-options",
  "x-content-type-options",
  "x-xss-protection",
  "x-content-security-policy",
  "x-content-security-policy-report-only",
  "x-webkit-csp",
  "x-webkit-csp-report-only",
  "x-permitted-cross-domain-policies",
  "x-download-options",
  "x-dns-prefetch-control",
  "x-ua-compatible",
  "x-powered-by",
  "x-sendfile",
  "x-lighttpd-send-file",
  "x-real-ip",
  "x-original-url",
  "x-rewrite-url",
]);
const REFUSED_X_PREFIXES = ["x-accel-", "x-forwarded-", "x-litespeed-", "x-middleware-", "x-envoy-"];

/** Statuses whose answer has no content (RFC 9110 §15.3.5, §15.3.6). */
const NO_CONTENT = new Set([204, 205]);

/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible characters, spaces and tabs: no CR, LF or NUL, which would end or split the header. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** The body is sent as JSON text, so only a JSON media type describes it (and none a browser renders). */
const JSON_MEDIA_TYPE = /^application\/(?:[A-Za-z0-9!#$&^_.-]+\+)?json\s*(?:;.*)?$/i;

export type CustomResponseCheck =
  | { readonly ok: true; readonly response: CustomResponse }
  | { readonly ok: false; readonly errors: FieldErrors };

/** The answer a `CustomHttpResponseError` asks for, or every reason it cannot be sent, by field. */
export function checkCustomResponse(thrown: {
  readonly status?: unknown;
  readonly headers?: unknown;
  readonly body?: unknown;
}): CustomResponseCheck {
  const errors: FieldErrors = {};
  const { status, body } = thrown;
  const validStatus =
    typeof status === "number" &&
    Number.isInteger(status) &&
    status >= 200 &&
    status <= 599 &&
    !(status >= 300 && status < 400);
  if (!validStatus) {
    addError(
      errors,
      "status",
      `must be a final status from 200 to 599 and not a redirect (3xx); got ${describe(status)}`,
    );
  } else if (NO_CONTENT.has(status) && body !== undefined && body !== null) {
    addError(errors, "body", `must be absent with status ${status}, which has no content`);
  }
  const headers = checkHeaders(thrown.headers, errors);
  if (!validStatus || Object.keys(errors).length > 0) return { ok: false, errors };
  return {
    ok: true,
    response: {
      status,
      headers,
      ...(!NO_CONTENT.has(status) && { body }),
    },
  };
}

function checkHeaders(given: unknown, errors: FieldErrors): Record<string, string> {
  const headers: Record<string, string> = {};
  if (given === undefined || given === null) return headers;
  if (typeof given !== "object" || Array.isArray(given)) {
    addError(errors, "headers", "must be an object of header names to values");
    return headers;
  }
  for (const [name, value] of Object.entries(given)) {
    const field = `headers.${name}`;
    if (!HEADER_NAME.test(name)) {
      addError(errors, field, "is not a valid header name");
      continue;
    }
    if (!mayBeSet(name.toLowerCase())) {
      addError(errors, field, "is not a header a reactor may set");
      continue;
    }
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      addError(errors, field, "must be a string");
      continue;
    }
    const text = String(value);
    if (!HEADER_VALUE.test(text)) addError(errors, field, "must not contain control characters");
    else if (name.toLowerCase() === "content-type" && !JSON_MEDIA_TYPE.test(text)) {
      addError(errors, field, "must be a JSON media type (application/json or application/…+json)");
    } else {
      Object.defineProperty(headers, name, {
        value: text,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return headers;
}

function mayBeSet(lower: string): boolean {
  if (ALLOWED_HEADERS.has(lower)) return true;
  if (!lower.startsWith("x-")) return false;
  return !REFUSED_X_HEADERS.has(lower) && !REFUSED_X_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

function describe(value: unknown): string {
  if (value === undefined) return "none";
  return typeof value === "number" ? String(value) : (JSON.stringify(value) ?? typeof value);
}
