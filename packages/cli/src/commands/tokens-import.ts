import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import {
  TesseraConnectionError,
  TesseraError,
  type CreateTokenInput,
  type TesseraClient,
  type Token,
} from "@tessera/sdk";
import { defineCommand, integerFlag } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { BadInput, EXIT, UsageError, explain, type ExitCode } from "../failure.js";
import { jsonProblem } from "../input.js";
import { printJsonLine, printNotice } from "../output/print.js";
import { ProgressBar } from "../progress.js";
import { fromApiJson, toApiJson, TOKEN_USER_DATA } from "../wire.js";

const LISTED_LINES = 20;

export const importTokens = defineCommand({
  name: "tokens import",
  usage: "[<file.jsonl> | -] [--concurrency <n>] [options]",
  summary: "Create a token for each line of a JSON Lines file of POST /tokens requests",
  description:
    "Each non-blank line is one request body, exactly as POST /tokens takes it. Without a file, or with '-',\n" +
    "the lines are read from standard input (a pipe); a pipe or /dev/stdin is read once, so its progress has no\n" +
    "end to measure against. A progress bar with the rate and the time left runs on stderr.\n" +
    "A line that is not a JSON object, or that the server refuses, is reported with its number and skipped:\n" +
    "the import goes on, and the summary lists the lines to fix and import again. If the server cannot be\n" +
    "reached, the import stops at once (exit 3) and says from which line to resume. Exit 0 when every line\n" +
    "was imported; 4 when a line was refused; 1 when the server failed on one (5xx). With --json, stdout gets\n" +
    "one JSON object per line read, in the order of the input: its line number and status, the token created\n" +
    "(without its data) or why the line failed.",
  operands: { min: 0, max: 1, name: "<file.jsonl>" },
  flags: {
    concurrency: { type: "string", value: "<n>", help: "Requests in flight at once, 1-64 (default 8)" },
    ...SERVER_FLAGS,
  },
  examples: [
    "tessera tokens import customers.jsonl",
    "tessera tokens import cards.jsonl --json > outcome.jsonl",
    "zcat cards.jsonl.gz | tessera tokens import --json | jq -c 'select(.status == \"failed\")'",
  ],
  run: async ({ values, operands: [file], command }) => {
    const concurrency = integerFlag(values.concurrency, "--concurrency", { min: 1, max: 64 }, command) ?? 8;
    const source = await openSource(file, command);
    return withClient(values, (client) => runImport(client, source, concurrency, values.json === true));
  },
});

/** Where the lines come from, and how many requests they hold when that can be known before sending any. */
interface Source {
  /** For the summary: the file's name, or "standard input". */
  readonly name: string;
  readonly total: number | undefined;
  lines(): AsyncIterable<string>;
}

/** Names of this process's own standard input. */
const STDIN_NAMES: ReadonlySet<string> = new Set(["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);

/**
 * A regular file is read twice: once to count its requests, so the bar knows its end, then to send them. Standard
 * input, a pipe or a device (`/dev/stdin`, `<(...)`) can be read only once: reading it to count would leave
 * nothing to import. `/dev/stdin` is read as the stream it names: opened anew it fails where standard input is a
 * socket (as a supervisor or another program may give it), with ENXIO.
 */
async function openSource(file: string | undefined, command: string): Promise<Source> {
  if (file === undefined || STDIN_NAMES.has(file)) {
    if (file === undefined && process.stdin.isTTY) {
      throw new UsageError(
        "no file given, and standard input is a terminal: pass a file or pipe the lines in",
        command,
      );
    }
    const name = file === undefined || file === "-" ? "standard input" : file;
    return { name, total: undefined, lines: () => linesOf(process.stdin) };
  }
  try {
    if ((await stat(file)).isFile()) {
      const total = await countRequests(file);
      return { name: file, total, lines: () => linesOf(createReadStream(file)) };
    }
    // Opened now, so that a failure to open is reported as such, not met halfway through the import.
    const handle = await open(file);
    return { name: file, total: undefined, lines: () => linesOf(handle.createReadStream()) };
  } catch (error) {
    throw new UsageError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code})`, command);
  }
}

interface Outcome {
  readonly line: number;
  readonly token?: Token;
  readonly error?: unknown;
}

/**
 * Sends up to `concurrency` lines at once but settles them in input order, so failures are reported, and results
 * printed, in the order of the input, and a stop leaves every earlier line settled.
 */
async function runImport(
  client: TesseraClient,
  source: Source,
  concurrency: number,
  json: boolean,
): Promise<number> {
  const bar = new ProgressBar(source.total, "lines");
  const pending: Promise<Outcome>[] = [];
  const failed: number[] = [];
  const importedAfterStop: number[] = [];
  let stop: Outcome | undefined;
  let imported = 0;
  let settled = 0;
  let sent = 0;
  let exitCode: ExitCode = EXIT.ok;

  const settle = (outcome: Outcome) => {
    if (json) printJsonLine(reportOf(outcome));
    if (outcome.token !== undefined) {
      imported++;
      if (stop !== undefined) importedAfterStop.push(outcome.line);
    }
    // After a stop, the lines still in flight are only waited for: the ones that did get in must be named, so
    // they are not imported twice; the others are to be imported again anyway.
    if (stop !== undefined) return;
    if (outcome.error instanceof TesseraConnectionError) {
      stop = outcome;
      return;
    }
    if (outcome.error !== undefined) {
      failed.push(outcome.line);
      const { code, message } = explain(outcome.error);
      bar.note(`line ${outcome.line}: ${message}`);
      if (exitCode !== EXIT.failure) exitCode = code === EXIT.failure ? EXIT.failure : EXIT.refused;
    }
    bar.update(++settled);
  };

  bar.update(0);
  let line = 0;
  for await (const text of source.lines()) {
    line++;
    if (text.trim() === "") continue;
    sent++;
    pending.push(importLine(client, line, text));
    if (pending.length >= concurrency) settle(await pending.shift()!);
    if (stop !== undefined) break;
  }
  for (let next = pending.shift(); next !== undefined; next = pending.shift()) settle(await next);
  bar.finish();

  printNotice(summary(source, imported, sent, failed));
  if (stop !== undefined) {
    const except = importedAfterStop.length === 0 ? "" : ` (except ${listOf(importedAfterStop)}, imported)`;
    printNotice(
      `The import stopped at line ${stop.line}: import that line and the ones after it again${except}.`,
    );
    throw stop.error;
  }
  return exitCode;
}

/**
 * One `--json` line per input line. A created token is shown without its `data`: the output of an import goes to
 * files and logs, and token data must not follow it there. A failure carries the message stderr shows and, when
 * the server refused the line, its problem details.
 */
function reportOf({ line, token, error }: Outcome): unknown {
  if (token !== undefined) {
    const { data: _data, ...shown } = toApiJson(token, TOKEN_USER_DATA) as Record<string, unknown>;
    return { line, status: "created", ...shown };
  }
  const { code, message } = explain(error);
  return {
    line,
    status: "failed",
    exit_code: code,
    message,
    ...(error instanceof TesseraError && { problem: problemOf(error) }),
  };
}

function problemOf(error: TesseraError): Record<string, unknown> {
  return {
    ...(error.type !== undefined && { type: error.type }),
    ...(error.title !== undefined && { title: error.title }),
    status: error.status,
    ...(error.detail !== undefined && { detail: error.detail }),
    ...(error.errors !== undefined && { errors: error.errors }),
  };
}

async function importLine(client: TesseraClient, line: number, text: string): Promise<Outcome> {
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch (error) {
    return { line, error: new BadInput(`the line ${jsonProblem(error)}`) };
  }
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    return { line, error: new BadInput("the line is not a JSON object (a POST /tokens request body)") };
  }
  try {
    return {
      line,
      token: await client.tokens.create(fromApiJson<CreateTokenInput>(request, TOKEN_USER_DATA)),
    };
  } catch (error) {
    return { line, error };
  }
}

/** The non-blank lines, counted in a first pass so the bar knows its end without holding the file in memory. */
async function countRequests(file: string): Promise<number> {
  let count = 0;
  for await (const text of linesOf(createReadStream(file))) if (text.trim() !== "") count++;
  return count;
}

function linesOf(input: NodeJS.ReadableStream): AsyncIterable<string> {
  return createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
}

/** Out of the requests counted beforehand, or else of those read before the end (or the stop). */
function summary(source: Source, imported: number, sent: number, failed: readonly number[]): string {
  const total = source.total ?? sent;
  const head = `Imported ${imported} of ${total} token${total === 1 ? "" : "s"} from ${source.name}`;
  if (failed.length === 0) return `${head}.`;
  return `${head}; ${failed.length} line${failed.length === 1 ? "" : "s"} failed: ${listOf(failed)}.`;
}

function listOf(lines: readonly number[]): string {
  const shown = lines.slice(0, LISTED_LINES).join(", ");
  return lines.length > LISTED_LINES ? `${shown} and ${lines.length - LISTED_LINES} more` : shown;
}
