/**
 * Date bounds of the query language (DESIGN §7). Stored timestamps are `Date#toISOString()` text with millisecond
 * precision, so every condition becomes a half-open interval of such strings: `from` is the first instant
 * included, `to` the first one excluded. Date-only bounds cover the whole UTC day.
 */
export interface Interval {
  readonly from?: string;
  readonly to?: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]00:?00)?$/;
const DAY_MS = 86_400_000;

/** A point in time to the millisecond, and whether the text said more than that (a fraction beyond ms). */
interface Instant {
  readonly ms: number;
  readonly subMs: boolean;
  readonly dateOnly: boolean;
}

export type BoundSide = "lower" | "upper";

/** Undefined when `text` is not an ISO 8601 date or UTC date-time that exists on the calendar. */
function parseInstant(text: string): Instant | undefined {
  const date = DATE.exec(text);
  if (date !== null) {
    const ms = utc(Number(date[1]), Number(date[2]), Number(date[3]), 0, 0, 0);
    return ms === undefined ? undefined : { ms, subMs: false, dateOnly: true };
  }
  const time = DATE_TIME.exec(text);
  if (time === null) return undefined;
  const [, y, mo, d, h, mi, s, fraction] = time;
  const base = utc(Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s ?? 0));
  if (base === undefined) return undefined;
  const digits = (fraction ?? "").padEnd(9, "0");
  return {
    ms: base + Number(digits.slice(0, 3)),
    subMs: Number(digits.slice(3)) > 0,
    dateOnly: false,
  };
}

/** Milliseconds since the epoch, or undefined for a day or time that does not exist (2023-02-29, 24:00). */
function utc(year: number, month: number, day: number, hour: number, minute: number, second: number) {
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  // Date.UTC rolls 02-30 over into March and maps years 0-99 to 1900-1999; both show up as a mismatch here.
  const check = new Date(ms);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) {
    return undefined;
  }
  return ms;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Whether `text` can be a bound at all; the problem to report when it cannot. */
export function dateProblem(text: string): string | undefined {
  return parseInstant(text) === undefined
    ? `'${text}' is not an ISO 8601 date (2024-01-31) or UTC date-time (2024-01-31T23:59:59Z)`
    : undefined;
}

/** The interval a bare date or date-time means: that whole UTC day, or that exact millisecond. */
export function pointInterval(text: string): Interval {
  const at = parseInstant(text)!;
  if (at.dateOnly) return { from: iso(at.ms), to: iso(at.ms + DAY_MS) };
  // A fraction finer than a millisecond names no stored instant.
  return at.subMs ? { from: iso(at.ms + 1), to: iso(at.ms + 1) } : { from: iso(at.ms), to: iso(at.ms + 1) };
}

/** One side of a range as the first included (lower) or first excluded (upper) stored instant. */
export function boundInstant(text: string, side: BoundSide, inclusive: boolean): string {
  const at = parseInstant(text)!;
  if (at.dateOnly) {
    // [2024-01-01 includes the day; {2024-01-01 starts after it ends; 2024-01-31] includes the day; 2024-01-31} ends before it.
    const afterDay = side === "lower" ? !inclusive : inclusive;
    return iso(afterDay ? at.ms + DAY_MS : at.ms);
  }
  // The first stored millisecond at or after the bound (lower inclusive, upper exclusive), or after it.
  const atOrAfter = at.subMs ? at.ms + 1 : at.ms;
  const after = at.ms + 1;
  if (side === "lower") return iso(inclusive ? atOrAfter : after);
  return iso(inclusive ? after : atOrAfter);
}
