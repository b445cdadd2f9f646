import type { CorsSettings } from "./server/cors.js";
import type { SessionSettings } from "./sessions/settings.js";
import { isLoopback, nonEmpty, parseBoolean, parseInteger, type Env } from "./config-values.js";

// The settings of what browsers reach: the hosted fields, sessions and CORS (parsed for config.ts).

/** Tessera Elements, the hosted fields (docs/elements.md#configuration). */
export interface ElementsConfig {
  /**
   * Origins whose pages may embed the field frames (CSP frame-ancestors), exact `scheme://host[:port]`. Empty:
   * no page may, and Elements is off for merchants.
   */
  readonly origins: readonly string[];
  /** Serves the demo checkout at /elements/demo (which also lets the vault's own origin embed the frames). */
  readonly demo: boolean;
}

const MAX_ELEMENTS_ORIGINS = 100;

/**
 * TESSERA_ELEMENTS_ORIGINS is its own setting rather than the CORS origins: embedding the fields and calling the
 * API from a page's script are different grants, and a merchant that uses only the fields keeps its pages out of
 * CORS altogether (docs/elements.md#configuration).
 */
export function parseElements(env: Env, production: boolean, problems: string[]): ElementsConfig {
  const origins: string[] = [];
  for (const entry of (nonEmpty(env.TESSERA_ELEMENTS_ORIGINS) ?? "").split(",")) {
    const text = entry.trim();
    if (text === "") continue;
    const origin = parseOrigin(text);
    if (origin === undefined) {
      problems.push(
        `TESSERA_ELEMENTS_ORIGINS: ${JSON.stringify(text)} is not an origin: give scheme://host[:port] of a page, ` +
          "like https://shop.example.com, without a path, a trailing slash or a wildcard",
      );
    } else if (
      production &&
      origin.startsWith("http:") &&
      !isLoopback(new URL(origin).hostname.replace(/^\[|\]$/g, ""))
    ) {
      problems.push(
        `TESSERA_ELEMENTS_ORIGINS: ${origin} is plain http; in production a checkout page must be https ` +
          "(anyone on the network could replace the page around the fields)",
      );
    } else if (!origins.includes(origin)) {
      origins.push(origin);
    }
  }
  if (origins.length > MAX_ELEMENTS_ORIGINS) {
    problems.push(`TESSERA_ELEMENTS_ORIGINS: at most ${MAX_ELEMENTS_ORIGINS} origins`);
  }
  const demo =
    nonEmpty(env.TESSERA_ELEMENTS_DEMO) === undefined
      ? !production
      : parseBoolean(env.TESSERA_ELEMENTS_DEMO, "TESSERA_ELEMENTS_DEMO", problems);
  return { origins: Object.freeze(origins), demo };
}

/** BT's default lifetime is 3 minutes: long enough to hand the nonce to a backend, short enough to leak little. */
const SESSION_TTL_S = 180;

export function parseSessions(env: Env, problems: string[]): SessionSettings {
  const ttl = parseInteger(
    env.TESSERA_SESSION_TTL_SECONDS,
    SESSION_TTL_S,
    10,
    86_400,
    "TESSERA_SESSION_TTL_SECONDS",
    problems,
  );
  const max = parseInteger(
    env.TESSERA_SESSION_MAX_TTL_SECONDS,
    3_600,
    10,
    86_400,
    "TESSERA_SESSION_MAX_TTL_SECONDS",
    problems,
  );
  if (max < ttl)
    problems.push("TESSERA_SESSION_MAX_TTL_SECONDS must be at least TESSERA_SESSION_TTL_SECONDS");
  return { ttlMs: ttl * 1000, maxTtlMs: max * 1000 };
}

const MAX_CORS_ORIGINS = 100;

/**
 * Exact origins only: a wildcard would let any page on the internet drive the public and session routes with a
 * key it got hold of, and browsers refuse `*` with credentials anyway.
 */
export function parseCors(env: Env, problems: string[]): CorsSettings {
  const origins: string[] = [];
  for (const entry of (nonEmpty(env.TESSERA_CORS_ORIGINS) ?? "").split(",")) {
    const text = entry.trim();
    if (text.length === 0) continue;
    const origin = parseOrigin(text);
    if (origin === undefined) {
      problems.push(
        `TESSERA_CORS_ORIGINS: ${JSON.stringify(text)} is not an origin: give scheme://host[:port] of a page, ` +
          "without path or wildcard",
      );
    } else if (!origins.includes(origin)) {
      origins.push(origin);
    }
  }
  if (origins.length > MAX_CORS_ORIGINS)
    problems.push(`TESSERA_CORS_ORIGINS: at most ${MAX_CORS_ORIGINS} origins`);
  const maxAgeSeconds = parseInteger(
    env.TESSERA_CORS_MAX_AGE_SECONDS,
    600,
    0,
    86_400,
    "TESSERA_CORS_MAX_AGE_SECONDS",
    problems,
  );
  return { origins: Object.freeze(origins), maxAgeSeconds };
}

/** `scheme://host[:port]` as a browser writes an origin (lower-case, default port left out), else undefined. */
function parseOrigin(text: string): string | undefined {
  if (!/^https?:\/\/[^/?#@*\s]+$/i.test(text)) return undefined;
  try {
    const url = new URL(text);
    return url.origin === "null" ? undefined : url.origin;
  } catch {
    return undefined;
  }
}
