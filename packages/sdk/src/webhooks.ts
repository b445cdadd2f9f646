/**
 * Standard Webhooks (https://www.standardwebhooks.com) verification, as Tessera signs its webhooks: an
 * HMAC-SHA256 over `${webhook-id}.${webhook-timestamp}.${body}` under the `whsec_` secret, base64 in
 * `webhook-signature`. Web Crypto only, so it runs unchanged on Node 16+ (through `node:crypto`'s `webcrypto`
 * where Node has no global one), Deno and browsers.
 */

/** A `Headers` (fetch, Deno) or anything with the same `get`. */
export interface HeadersLike {
  get(name: string): string | null;
}

/** Node's `request.headers`, or any plain object of headers, whatever the case of its keys. */
export type HeaderRecord = Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way, in seconds; default 300. */
  toleranceSeconds?: number;
}

/**
 * The message is not what Tessera sent: a header is missing or malformed, the timestamp is outside the
 * tolerance (a stale or replayed message), no signature matches, or the body is not JSON. `message` says which.
 *
 * @example
 * try {
 *   event = await verifyWebhook(body, request.headers, secret);
 * } catch (error) {
 *   if (error instanceof WebhookVerificationError) return response.writeHead(400).end(error.message);
 *   throw error;
 * }
 */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

const SECRET_PREFIX = "whsec_";
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

/** The part of Web Crypto used here, as both the global `crypto.subtle` and `node:crypto`'s `webcrypto` have it. */
interface HmacVerifier {
  importKey(
    format: "raw",
    keyData: Uint8Array,
    algorithm: { name: "HMAC"; hash: "SHA-256" },
    extractable: false,
    keyUsages: ["verify"],
  ): Promise<unknown>;
  verify(algorithm: "HMAC", key: unknown, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
}

/**
 * Checks that a webhook came from Tessera and returns its parsed JSON body. Pass the body exactly as received
 * (the raw text or bytes, before any JSON parsing: re-serialized JSON would not match the signature), the
 * request's headers, and the signing secret (`whsec_<base64>`, or the bare base64). Signatures are compared in
 * constant time (Web Crypto's `verify`); any one `v1` signature of the space-separated list may match, so that
 * messages signed during a secret rotation verify under either secret.
 *
 * @example
 * // Node's http server; any framework works that gives the raw body.
 * const chunks = [];
 * for await (const chunk of request) chunks.push(chunk);
 * const result = await verifyWebhook(Buffer.concat(chunks), request.headers, process.env.TESSERA_WEBHOOK_SECRET!);
 */
export async function verifyWebhook<T = unknown>(
  payload: string | Uint8Array,
  headers: HeadersLike | HeaderRecord,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<T> {
  const id = requiredHeader(headers, "webhook-id");
  const timestamp = requiredHeader(headers, "webhook-timestamp");
  const signatures = requiredHeader(headers, "webhook-signature");

  if (!/^\d+$/.test(timestamp)) {
    throw new WebhookVerificationError("webhook-timestamp must be a Unix time in whole seconds");
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const skew = Math.floor(Date.now() / 1000) - Number(timestamp);
  if (Math.abs(skew) > tolerance) {
    const when = skew > 0 ? `${skew} s old` : `${-skew} s in the future`;
    throw new WebhookVerificationError(
      `webhook-timestamp is ${when}, beyond the ${tolerance} s tolerance: a stale or replayed message, or a wrong clock`,
    );
  }

  const body = typeof payload === "string" ? new TextEncoder().encode(payload) : payload;
  const signed = concat(new TextEncoder().encode(`${id}.${timestamp}.`), body);
  const subtle = await hmacVerifier();
  const key = await subtle.importKey("raw", secretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);

  const candidates = signatures
    .split(" ")
    .map((entry) => entry.split(","))
    .filter(([version, signature]) => version === "v1" && signature !== undefined)
    .map(([, signature]) => base64Bytes(signature ?? ""))
    .filter((bytes): bytes is Uint8Array => bytes !== undefined);
  if (candidates.length === 0) {
    throw new WebhookVerificationError('webhook-signature holds no "v1,<base64>" signature');
  }
  let matched = false;
  // Every candidate is checked, so that the time taken does not tell which one matched.
  for (const candidate of candidates) {
    if (await subtle.verify("HMAC", key, candidate, signed)) matched = true;
  }
  if (!matched) {
    throw new WebhookVerificationError(
      "no signature matches: a wrong secret, or the body, webhook-id or webhook-timestamp was altered",
    );
  }

  try {
    return JSON.parse(new TextDecoder().decode(body)) as T;
  } catch {
    throw new WebhookVerificationError("the signed body is not JSON");
  }
}

function requiredHeader(headers: HeadersLike | HeaderRecord, name: string): string {
  const value = headerOf(headers, name);
  if (value === undefined || value.length === 0) {
    throw new WebhookVerificationError(`the ${name} header is missing`);
  }
  return value;
}

function headerOf(headers: HeadersLike | HeaderRecord, name: string): string | undefined {
  if (isHeadersLike(headers)) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    // A header sent twice arrives as an array in Node; for signatures, both lists count.
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(" ") : value;
  }
  return undefined;
}

function isHeadersLike(headers: HeadersLike | HeaderRecord): headers is HeadersLike {
  return typeof (headers as { get?: unknown }).get === "function";
}

function secretBytes(secret: string): Uint8Array {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const bytes = base64Bytes(encoded);
  if (bytes === undefined || bytes.length === 0) {
    throw new WebhookVerificationError("the secret must be whsec_ followed by base64 (or the base64 alone)");
  }
  return bytes;
}

function base64Bytes(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function concat(head: Uint8Array, tail: Uint8Array): Uint8Array {
  const joined = new Uint8Array(head.length + tail.length);
  joined.set(head);
  joined.set(tail, head.length);
  return joined;
}

/** Web Crypto: global in current Node, Deno and browsers; on older Node reached through `node:crypto`. */
async function hmacVerifier(): Promise<HmacVerifier> {
  const global = (globalThis as { crypto?: { subtle?: unknown } }).crypto?.subtle;
  if (global !== undefined) return global as HmacVerifier;
  // A variable specifier, so that bundlers for other runtimes leave this fallback alone; Vite (Rolldown) folds the
  // constant and would resolve it to an empty browser stub with a warning, unless told to leave the import be.
  const nodeCrypto = "node:crypto";
  const { webcrypto } = (await import(/* @vite-ignore */ nodeCrypto)) as { webcrypto: { subtle: unknown } };
  return webcrypto.subtle as HmacVerifier;
}
