import type { Decision } from "./decide.js";

/** What a decision shows of a token's data: the value itself, or nothing (`undefined`). */
export type Shown = { readonly value: unknown } | undefined;

/**
 * Whether `decision` shows any of a token's data, given whether the token has a mask: a token shown without it is
 * never decrypted.
 */
export function showsData(decision: Decision, hasMask: boolean): boolean {
  return decision.transform === "reveal" || (decision.transform === "mask" && hasMask);
}

/**
 * The access transform (docs/tokens.md#access-rules-and-transforms): redact drops the data; mask shows what
 * `masked` makes of it, or nothing when the token has no mask or its mask no longer fits the data (`masked`
 * answers undefined: a mask changed by an update fails closed); reveal shows the data itself.
 */
export function applyTransform(
  decision: Decision,
  data: unknown,
  masked: ((data: unknown) => Shown) | undefined,
): Shown {
  switch (decision.transform) {
    case "reveal":
      return { value: data };
    case "redact":
      return undefined;
    case "mask":
      return masked?.(data);
  }
}
