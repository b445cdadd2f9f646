import { formatDetails, formatTable, printable, type Column } from "./table.js";
import { styleFor } from "./style.js";

/** Machine output: the value as pretty-printed JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Machine output for streams of resources (`--all`, `tokens import`): one compact JSON document per line. */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function printTable(columns: readonly Column[], rows: readonly (readonly string[])[]): void {
  process.stdout.write(formatTable(columns, rows, styleFor(process.stdout)));
}

export function printDetails(pairs: readonly (readonly [string, string | undefined])[]): void {
  process.stdout.write(formatDetails(pairs, styleFor(process.stdout)));
}

/**
 * A labelled JSON value for people: the label, then the value pretty-printed and indented beneath it. JSON escapes
 * only some control characters, so each line is made printable too.
 */
export function printJsonBlock(label: string, value: unknown): void {
  const style = styleFor(process.stdout);
  const lines = (JSON.stringify(value, null, 2) ?? "null").split("\n");
  process.stdout.write(`${style.bold(label)}\n${lines.map((line) => `  ${printable(line)}`).join("\n")}\n`);
}

/** A line for the person at the terminal; on stdout, as part of the human-readable output. */
export function printLine(text = ""): void {
  process.stdout.write(`${text}\n`);
}

/** Advice about the output (a key shown once, what to run next): on stderr, so pipes carry only the output. */
export function printNotice(text: string): void {
  process.stderr.write(`${text}\n`);
}
