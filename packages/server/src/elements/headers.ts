import type { AssetRole } from "./assets.js";

/**
 * The response headers of each kind of Elements file (docs/elements.md#what-the-vault-serves). Pure, so that the
 * policies are tested as text and in the browser.
 */

export interface HeaderSettings {
  /** Origins whose pages may embed the fields (TESSERA_ELEMENTS_ORIGINS). */
  readonly origins: readonly string[];
  /** The demo page is served; it embeds the fields from the vault's own origin. */
  readonly demo: boolean;
}

/** Long-lived files have a content hash in their name; the rest are revalidated (their ETag includes the policy). */
const IMMUTABLE = "public, max-age=31536000, immutable";
const REVALIDATE = "no-cache";
/** The library's URL is stable, and a page that pins it with SRI needs a fixed body for a while at least. */
const LIBRARY = "public, max-age=300";

/** Nothing but the document itself: the default for files that are never rendered as a page. */
const NOTHING = "default-src 'none'; frame-ancestors 'none'";

/**
 * The field document: its own script, style and API only, no inline code, no forms, no base, DOM sinks closed by
 * Trusted Types; embeddable only by the allowed origins (and the vault's own demo page when it is on).
 */
export function framePolicy(settings: HeaderSettings): string {
  const ancestors = [...(settings.demo ? ["'self'"] : []), ...settings.origins];
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
    `frame-ancestors ${ancestors.length > 0 ? ancestors.join(" ") : "'none'"}`,
  ].join("; ");
}

/** The demo checkout: the library and its own script, frames from the vault, never framed itself. */
export const DEMO_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "frame-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export function headersFor(role: AssetRole, settings: HeaderSettings): Record<string, string> {
  const always = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };
  switch (role) {
    case "library":
      // Loaded by merchant pages as a script; `crossorigin` + SRI needs CORS, which a public file can give.
      return {
        ...always,
        "cache-control": LIBRARY,
        "content-security-policy": NOTHING,
        "access-control-allow-origin": "*",
        "cross-origin-resource-policy": "cross-origin",
      };
    case "frame":
      return { ...always, "cache-control": REVALIDATE, "content-security-policy": framePolicy(settings) };
    case "demo-page":
      return {
        ...always,
        "cache-control": REVALIDATE,
        "content-security-policy": DEMO_POLICY,
        "x-frame-options": "DENY",
      };
    case "asset":
    case "demo-asset":
      return {
        ...always,
        "cache-control": IMMUTABLE,
        "content-security-policy": NOTHING,
        "cross-origin-resource-policy": "same-origin",
      };
  }
}
