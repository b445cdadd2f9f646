import type { Style } from "./style.js";

export interface Column {
  readonly header: string;
  /** Longer cells are cut to this many characters, ending in "…". */
  readonly max?: number;
}

/**
 * Aligned columns, two spaces apart, the header emphasized. Widths are measured on the plain text; emphasis is
 * added after padding, so escape codes never skew the alignment.
 */
export function formatTable(
  columns: readonly Column[],
  rows: readonly (readonly string[])[],
  style: Style,
): string {
  const cells = rows.map((row) => columns.map((column, i) => fit(printable(row[i] ?? ""), column.max)));
  const widths = columns.map((column, i) =>
    Math.max(column.header.length, ...cells.map((row) => row[i]!.length)),
  );
  const line = (row: readonly string[], emphasize: (text: string) => string) =>
    row
      .map((text, i) => emphasize(i === row.length - 1 ? text : text.padEnd(widths[i]!)))
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
  const width = Math.max(...shown.map(([label]) => label.length));
  return (
    shown.map(([label, value]) => `${style.dim(label.padEnd(width))}  ${printable(value)}`).join("\n") + "\n"
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

function fit(text: string, max: number | undefined): string {
  return max === undefined || text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
