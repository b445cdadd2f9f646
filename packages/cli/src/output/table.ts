import stringWidth from "string-width";
import type { Style } from "./style.js";

export interface Column {
  readonly header: string;
  /** Longer cells are cut to this many columns of the terminal, ending in "…". */
  readonly max?: number;
}

/**
 * Aligned columns, two spaces apart, the header emphasized. Widths are what a terminal shows, measured by
 * string-width: a CJK character or an emoji takes two columns, a combining accent none, so names in any script
 * line up. Emphasis is added after padding, so escape codes never skew the alignment.
 */
export function formatTable(
  columns: readonly Column[],
  rows: readonly (readonly string[])[],
  style: Style,
): string {
  const cells = rows.map((row) => columns.map((column, i) => fit(printable(row[i] ?? ""), column.max)));
  const widths = columns.map((column, i) =>
    Math.max(stringWidth(column.header), ...cells.map((row) => stringWidth(row[i]!))),
  );
  const line = (row: readonly string[], emphasize: (text: string) => string) =>
    row
      .map((text, i) => emphasize(i === row.length - 1 ? text : pad(text, widths[i]!)))
      .join("  ")
      .trimEnd();
  const header = line(
    columns.map((column) => column.header),
    style.bold,
  );
  return [header, ...cells.map((row) => line(row, (text) => text))].join("\n") + "\n";
}

/** `label  value` lines for one resource; absent values are left out. */
export function formatDetails(
  pairs: readonly (readonly [string, string | undefined])[],
  style: Style,
): string {
  const shown = pairs.filter((pair): pair is readonly [string, string] => pair[1] !== undefined);
  const width = Math.max(...shown.map(([label]) => stringWidth(label)));
  return (
    shown.map(([label, value]) => `${style.dim(pad(label, width))}  ${printable(value)}`).join("\n") + "\n"
  );
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Names, metadata and token data come from the server and may hold control characters; written raw, an escape
 * sequence could rewrite the terminal. They are shown escaped instead.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Pads to `width` columns of the terminal (padEnd counts UTF-16 units, which is not what a terminal shows). */
function pad(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - stringWidth(text)));
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * Cuts to at most `max` columns, "…" included. Whole graphemes are kept, so an emoji sequence (👩‍👩‍👧) or a letter
 * with its accents is never split into pieces a terminal would draw as something else.
 */
function fit(text: string, max: number | undefined): string {
  if (max === undefined || stringWidth(text) <= max) return text;
  let kept = "";
  let width = 0;
  for (const { segment } of graphemes.segment(text)) {
    const next = stringWidth(segment);
    if (width + next > max - 1) break;
    kept += segment;
    width += next;
  }
  return `${kept}…`;
}
