/** A sustained rate with room for bursts: `burst` requests at once, then `perSecond` on average. */
export interface Rate {
  /** Tokens added per second (more than 0). */
  readonly perSecond: number;
  /** The bucket's size (at least 1): how many requests may come at once after a quiet spell. */
  readonly burst: number;
}

export type Taken = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterMs: number };

export interface TokenBuckets {
  /**
   * Takes `count` tokens (1 by default) from `key`'s bucket if it holds that many; otherwise takes none and says
   * how long until it will. A `count` above the bucket's size is never allowed: callers keep it within `burst`.
   */
  take(key: string, count?: number): Taken;
  /** Like `take`, without taking: for limits that are charged only after the fact (failed authentications). */
  check(key: string): Taken;
  /** Buckets held; never more than `maxEntries`. */
  readonly size: number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date, in `now()` milliseconds. */
  at: number;
}

const ALLOWED: Taken = { allowed: true };
const WHOLE_TOKEN = 1 - 1e-9;

/**
 * One token bucket per key, in process memory. A Map keeps insertion order, so re-inserting a key on every use
 * makes its first entry the least recently used: that one is dropped when the map is full, so a flood of
 * distinct keys costs bounded memory. Dropping a bucket forgets its debt (a new one starts full), which can only
 * make the limit more lenient for that key, never stricter for anyone. The least recently used bucket is almost
 * always already full again (refilled after `burst / perSecond` seconds), so nothing is lost in practice.
 *
 * `now` is a monotonic clock in milliseconds (tests pass their own).
 */
export function createTokenBuckets(
  rate: Rate,
  maxEntries: number,
  now: () => number = () => performance.now(),
): TokenBuckets {
  const buckets = new Map<string, Bucket>();
  const perMs = rate.perSecond / 1000;

  const refilled = (bucket: Bucket, time: number): number =>
    Math.min(rate.burst, bucket.tokens + Math.max(0, time - bucket.at) * perMs);

  // Refills are sums of floating-point fractions: 0.42 + 116 × 0.005 comes to a hair under or over 1. Both the
  // verdict and the promised wait measure against one token less this margin, so that a Retry-After is never a
  // millisecond late because of rounding, and a request sent when it says is allowed.
  const verdict = (tokens: number, count = 1): Taken => {
    const needed = count - 1 + WHOLE_TOKEN;
    return tokens >= needed
      ? ALLOWED
      : { allowed: false, retryAfterMs: Math.ceil((needed - tokens) / perMs) };
  };

  return {
    take(key, count = 1) {
      const time = now();
      const found = buckets.get(key);
      const tokens = found === undefined ? rate.burst : refilled(found, time);
      const taken = verdict(tokens, count);
      buckets.delete(key);
      buckets.set(key, { tokens: taken.allowed ? tokens - count : tokens, at: time });
      if (buckets.size > maxEntries) buckets.delete(buckets.keys().next().value as string);
      return taken;
    },
    // Creates nothing: an unknown key's bucket would be full, and every request is checked.
    check(key) {
      const found = buckets.get(key);
      return found === undefined ? ALLOWED : verdict(refilled(found, now()));
    },
    get size() {
      return buckets.size;
    },
  };
}
