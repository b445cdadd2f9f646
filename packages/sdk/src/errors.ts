/** Field → messages, as the server reports them for a 400. */
export type FieldErrors = Record<string, string[]>;

/**
 * The server answered with a status outside 2xx. Tessera answers with RFC 9457 problem details
 * (`application/problem+json`); their members are copied here when present, and `body` holds the whole parsed
 * body (or the raw text when it was not JSON, e.g. from a proxy in front of the server).
 *
 * The statuses a caller usually handles have their own subclasses ({@link TesseraValidationError},
 * {@link TesseraNotFoundError}, ...); any other status (413, 415, ...) is a plain TesseraError. All of them are
 * TesseraErrors, so one `instanceof TesseraError` catches every answer that was not a success.
 *
 * `errors` is keyed by the field paths the server received, in wire spelling (`expires_at`, `rules[0].priority`),
 * not renamed to camelCase: the paths point into the request as it was sent.
 *
 * @example
 * try {
 *   await client.applications.get(id);
 * } catch (error) {
 *   if (error instanceof TesseraError && error.status === 404) return undefined;
 *   throw error;
 * }
 */
export class TesseraError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** A problem type URI such as `urn:tessera:problem:not-found`. */
  readonly type?: string;
  readonly title?: string;
  readonly detail?: string;
  readonly errors?: FieldErrors;
  /** The parsed JSON body, or the text of a body that was not JSON. */
  readonly body: unknown;

  /** `fallback` is the message when the body names no detail or title. */
  constructor(status: number, body: unknown, fallback = `HTTP ${status}`) {
    const problem = isObject(body) ? body : {};
    const title = stringOf(problem.title);
    const detail = stringOf(problem.detail);
    super(detail ?? title ?? fallback);
    this.name = new.target.name;
    this.status = status;
    this.body = body;
    const type = stringOf(problem.type);
    const errors = fieldErrorsOf(problem.errors);
    if (type !== undefined) this.type = type;
    if (title !== undefined) this.title = title;
    if (detail !== undefined) this.detail = detail;
    if (errors !== undefined) this.errors = errors;
  }
}

/**
 * 400: the request was refused as it stands; `errors` names each invalid field (wire spelling) with its messages.
 *
 * @example
 * try {
 *   await client.tokens.create({ type: "card_number", data: "4242424242424241" });
 * } catch (error) {
 *   if (error instanceof TesseraValidationError) console.error(error.errors); // { data: ["fails the Luhn check"] }
 *   throw error;
 * }
 */
export class TesseraValidationError extends TesseraError {}

/**
 * 401: the API key is missing, unknown, regenerated, deleted or expired.
 *
 * @example
 * try {
 *   await client.applications.getByKey();
 * } catch (error) {
 *   if (error instanceof TesseraAuthenticationError) console.error("the key no longer works; issue a new one");
 *   throw error;
 * }
 */
export class TesseraAuthenticationError extends TesseraError {}

/**
 * 403: the key is valid but lacks the permission, or no access rule lets it reach the token's container.
 *
 * @example
 * try {
 *   await client.detokenize({ card: `{{ ${id} }}` });
 * } catch (error) {
 *   if (error instanceof TesseraForbiddenError) console.error(error.detail);
 *   throw error;
 * }
 */
export class TesseraForbiddenError extends TesseraError {}

/**
 * 404: the resource does not exist or is not visible to the caller; Tessera answers both the same way.
 *
 * @example
 * const token = await client.tokens.get(id).catch((error: unknown) => {
 *   if (error instanceof TesseraNotFoundError) return undefined;
 *   throw error;
 * });
 */
export class TesseraNotFoundError extends TesseraError {}

/**
 * 409: the request conflicts with the current state, e.g. a token id that is taken, or a token that changed
 * while an update ran (that one can simply be sent again).
 *
 * @example
 * try {
 *   await client.tokens.create({ id: "order-42", data: "secret" });
 * } catch (error) {
 *   if (error instanceof TesseraConflictError) console.error("order-42 exists already");
 *   throw error;
 * }
 */
export class TesseraConflictError extends TesseraError {}

/**
 * 429: too many requests. Idempotent calls were already retried; `retryAfter` is how many seconds the server
 * asked the caller to wait, when it said so.
 *
 * @example
 * try {
 *   await client.tokens.search({ query: "type:card" });
 * } catch (error) {
 *   if (error instanceof TesseraRateLimitError) await sleep((error.retryAfter ?? 1) * 1000);
 *   throw error;
 * }
 */
export class TesseraRateLimitError extends TesseraError {
  /** Seconds to wait, from the `Retry-After` header (seconds or an HTTP date); absent when there was none. */
  readonly retryAfter?: number;

  constructor(status: number, body: unknown, retryAfter: number | undefined) {
    super(status, body);
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

/**
 * A 5xx: the server (or a proxy in front of it) failed. 502, 503 and 504 on idempotent calls were retried first.
 *
 * @example
 * try {
 *   await client.tokens.get(id);
 * } catch (error) {
 *   if (error instanceof TesseraServerError) console.error(`vault failed (${error.status}); try again later`);
 *   throw error;
 * }
 */
export class TesseraServerError extends TesseraError {}

/** The error for a response outside 2xx: the class that names its status, else a plain {@link TesseraError}. */
export function errorForResponse(
  status: number,
  body: unknown,
  retryAfter: number | undefined,
): TesseraError {
  switch (status) {
    case 400:
      return new TesseraValidationError(status, body);
    case 401:
      return new TesseraAuthenticationError(status, body);
    case 403:
      return new TesseraForbiddenError(status, body);
    case 404:
      return new TesseraNotFoundError(status, body);
    case 409:
      return new TesseraConflictError(status, body);
    case 429:
      return new TesseraRateLimitError(status, body, retryAfter);
    default:
      return status >= 500 ? new TesseraServerError(status, body) : new TesseraError(status, body);
  }
}

/**
 * No response arrived: the server could not be reached, the connection failed, or `timeoutMs` passed before the
 * response was complete (`timedOut`). The underlying error is in `cause`. A request that timed out may still
 * have been carried out by the server. Never retried: the SDK cannot tell whether the server acted on it.
 *
 * @example
 * try {
 *   await client.applications.getByKey();
 * } catch (error) {
 *   if (error instanceof TesseraConnectionError) console.error("vault unreachable:", error.message);
 *   throw error;
 * }
 */
export class TesseraConnectionError extends Error {
  /** True when the request was aborted because `timeoutMs` elapsed. */
  readonly timedOut: boolean;

  constructor(message: string, options: { cause: unknown; timedOut: boolean }) {
    super(message, { cause: options.cause });
    this.name = "TesseraConnectionError";
    this.timedOut = options.timedOut;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function fieldErrorsOf(value: unknown): FieldErrors | undefined {
  if (!isObject(value)) return undefined;
  const errors: FieldErrors = {};
  for (const [field, messages] of Object.entries(value)) {
    if (Array.isArray(messages)) errors[field] = messages.filter((m): m is string => typeof m === "string");
    else if (typeof messages === "string") errors[field] = [messages];
  }
  return errors;
}
