import { readFile } from "node:fs/promises";
import { UsageError } from "./failure.js";

/** The text of a file, or of stdin when `source` is `-`; an unreadable file is a usage error. */
export async function readSource(source: string, flag: string, command: string): Promise<string> {
  if (source === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  try {
    return await readFile(source, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(`${flag}: cannot read ${source} (${reason})`, command);
  }
}

/** The JSON document in a file (or stdin for `-`); one that does not parse is a usage error. */
export async function readJson(source: string, flag: string, command: string): Promise<unknown> {
  return parseJson(await readSource(source, flag, command), `${flag} ${source}`, command);
}

export function parseJson(text: string, what: string, command: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(`${what} ${jsonProblem(error)}`, command);
  }
}

/**
 * Why JSON.parse failed, without its message: V8 quotes the text it could not parse, and the text here is token
 * data, which must not end up in a terminal's scrollback or a CI log. Only the position is kept.
 */
export function jsonProblem(error: unknown): string {
  const position = /position (\d+)/.exec(error instanceof Error ? error.message : "")?.[1];
  return position === undefined
    ? "is not valid JSON"
    : `is not valid JSON (at character ${Number(position) + 1})`;
}

/** Repeated `--flag key=value` → an object; the first `=` separates, so values may contain more. */
export function keyValues(
  pairs: readonly string[] | undefined,
  flag: string,
  command: string,
): Record<string, string> | undefined {
  if (pairs === undefined) return undefined;
  const object: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at < 1) throw new UsageError(`${flag} takes key=value, not '${pair}'`, command);
    Object.defineProperty(object, pair.slice(0, at), {
      value: pair.slice(at + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return object;
}

/** `--body` carries the whole request, so it cannot be combined with the flags that build one. */
export function assertAlone(
  values: Readonly<Record<string, unknown>>,
  flag: string,
  builders: readonly string[],
  command: string,
): void {
  const mixed = builders.filter((name) => values[name] !== undefined);
  if (values[flag] !== undefined && mixed.length > 0) {
    throw new UsageError(`--${flag} replaces --${mixed.join(", --")}: pass one or the other`, command);
  }
}
