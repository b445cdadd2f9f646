import type { Rate } from "./token-bucket.js";

/** Rate limits, bounded concurrency and load shedding (docs/limits.md). */
export interface LimitsConfig {
  /** Whom to believe about the client's address (X-Forwarded-For): Fastify's `trustProxy`. */
  readonly trustProxy: boolean | number | readonly string[];
  /** Requests per API key (per Application); undefined when off. */
  readonly perKey: Rate | undefined;
  /** Requests per public Application's key, instead of `perKey`; undefined when off. */
  readonly perPublicKey: Rate | undefined;
  /** Requests per session key, instead of `perKey`; undefined when off. */
  readonly perSession: Rate | undefined;
  /** Requests per source address (IPv6: per /64), authenticated or not; undefined when off. */
  readonly perAddress: Rate | undefined;
  /** Failed authentications per source address, beyond which the address is refused; undefined when off. */
  readonly authFailures: Rate | undefined;
  /**
   * `data:` terms searched per API key (per Application): the brute-force control on the search index
   * (docs/limits.md#data-search-terms); undefined when off.
   */
  readonly dataTerms: Rate | undefined;
  /** Buckets each of those limits keeps, least recently used dropped first. */
  readonly maxEntries: number;
  readonly searches: ConcurrencyLimit;
  readonly reacts: ConcurrencyLimit;
  /** How long a request waits in a concurrency queue before it is refused. */
  readonly queueTimeoutMs: number;
  readonly pressure: PressureLimits;
}

export interface ConcurrencyLimit {
  /** Requests handled at once. */
  readonly limit: number;
  /** Requests waiting for a slot; beyond them a 503 at once. */
  readonly queue: number;
}

/** Beyond any of these (0: not checked), API requests are answered 503 until the next sample is below. */
export interface PressureLimits {
  readonly maxEventLoopDelayMs: number;
  /** A percentage of V8's heap limit (--max-old-space-size). */
  readonly maxHeapUsedPercent: number;
  readonly maxRssMiB: number;
}
