/** Checks on text a client sends that every feature shares; no feature, storage or web code. */

/**
 * What is wrong with a free-text field that will be stored as text, if anything. PostgreSQL cannot store
 * U+0000 in text, and a name that only SQLite could store would make the two stores disagree.
 */
export function textProblem(value: string): string | undefined {
  if (value.trim().length === 0) return "must not be blank";
  if (value.includes("\u0000")) return "must not contain NUL characters";
  if (hasLoneSurrogate(value)) return "must be well-formed Unicode";
  return undefined;
}

export function hasControlCharacter(text: string): boolean {
  return [...text].some((c) => c.charCodeAt(0) < 0x20);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A lone UTF-16 surrogate cannot be encoded as UTF-8: each store would replace it (differently), so a value
 * stored with one would not read back as itself.
 */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/**
 * A date-time that passed the schema's RFC 3339 check as an ISO string, or a problem. RFC 3339 allows a leap
 * second (23:59:60), which JavaScript dates cannot represent.
 */
export function parseTimestamp(text: string): { iso: string } | { problem: string } {
  const time = new Date(text).getTime();
  return Number.isNaN(time)
    ? { problem: "must be a valid date-time" }
    : { iso: new Date(time).toISOString() };
}
