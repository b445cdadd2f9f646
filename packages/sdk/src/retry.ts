/**
 * When a failed call is sent again. Only answers that say "not now" qualify (429, 502, 503, 504): any other 4xx
 * would fail the same way again, and any other 5xx may have done part of the work. The transport retries only
 * idempotent calls, whose repetition cannot create or change anything twice.
 */

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly maxRetries: number;
  /** The backoff's scale: the first retry waits up to this long, each next one up to twice as long as the last. */
  readonly baseDelayMs: number;
  /** No wait is longer than this, whether from the backoff or from `Retry-After`. */
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 2, baseDelayMs: 500, maxDelayMs: 10_000 };

/**
 * Full-jitter exponential backoff: a uniform wait in [0, min(maxDelayMs, baseDelayMs · 2^retry)). Spreading
 * the whole interval, rather than adding a little jitter to a fixed step, keeps many clients that failed
 * together from coming back together.
 */
export function backoffDelayMs(
  retry: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.floor(random() * ceiling);
}

/** The wait before retry number `retry` (from 0): what the server asked for, else the backoff; capped either way. */
export function retryDelayMs(
  retry: number,
  policy: RetryPolicy,
  retryAfterSeconds: number | undefined,
  random: () => number = Math.random,
): number {
  if (retryAfterSeconds === undefined) return backoffDelayMs(retry, policy, random);
  return Math.min(policy.maxDelayMs, retryAfterSeconds * 1000);
}

/** `Retry-After` as seconds from `now`: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when unusable. */
export function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value);
  // Date.parse reads almost anything ("-1" is a year); an HTTP date always names its month.
  const at = /[A-Za-z]{3}/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
