/** Field → messages, as the server reports them for a 400. */
export type FieldErrors = Record<string, string[]>;

/**
 * The server answered with a status outside 2xx. Tessera answers with RFC 9457 problem details
 * (`application/problem+json`); their members are copied here when present, and `body` holds the whole parsed
 * body (or the raw text when it was not JSON, e.g. from a proxy in front of the server).
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
    this.name = "TesseraError";
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
 * No response arrived: the server could not be reached, the connection failed, or `timeoutMs` passed before the
 * response was complete (`timedOut`). The underlying error is in `cause`. A request that timed out may still
 * have been carried out by the server.
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
