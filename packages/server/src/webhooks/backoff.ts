export interface RetryPolicy {
  /** The delay before the second attempt, doubled for each one after. */
  readonly baseMs: number;
  /** The longest delay between two attempts. */
  readonly capMs: number;
  /** No attempt starts later than this after the first one. */
  readonly windowMs: number;
}

/** Standard Webhooks' guidance: retries spread over about a day (DESIGN §8: at least 24 h). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  baseMs: 5_000,
  capMs: 60 * 60_000,
  windowMs: 24 * 60 * 60_000,
};

/**
 * When to try again after `attempt` failed attempts (1 after the first), `elapsedMs` after the first began, or
 * undefined to give up: exponential backoff with "equal jitter" — half the delay fixed, half random — so that
 * receivers coming back from an outage are not hit by every retry at the same instant. The last attempt falls at
 * the end of the window, so a receiver that is down for almost the whole window still gets the message.
 */
export function nextAttemptDelay(
  attempt: number,
  elapsedMs: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number | undefined {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt - 1, 40));
  const delay = Math.round(ceiling / 2 + random() * (ceiling / 2));
  if (elapsedMs >= policy.windowMs) return undefined;
  return Math.min(delay, policy.windowMs - elapsedMs);
}
