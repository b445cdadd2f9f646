import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { TesseraConnectionError, type CreateTokenInput, type TesseraClient, type Token } from "@tessera/sdk";
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
  usage: "<file.jsonl> [--concurrency <n>] [options]",
  summary: "Create a token for each line of a JSON Lines file of POST /tokens requests",
  description:
    "Each non-blank line is one request body, exactly as POST /tokens takes it. A progress bar runs on stderr.\n" +
    "A line that is not a JSON object, or that the server refuses, is reported with its number and skipped:\n" +
    "the import goes on, and the summary lists the lines to fix and import again. If the server cannot be\n" +
    "reached, the import stops at once (exit 3) and says from which line to resume. Exit 0 when every line\n" +
    "was imported; 4 when a line was refused; 1 when the server failed on one (5xx). With --json, stdout gets\n" +
    "each created token on a line of its own, in the order of the file.",
  operands: { min: 1, max: 1, name: "<file.jsonl>" },
  flags: {
    concurrency: { type: "string", value: "<n>", help: "Requests in flight at once, 1-64 (default 8)" },
    ...SERVER_FLAGS,
  },
  examples: [
    "tessera tokens import customers.jsonl",
    "tessera tokens import cards.jsonl --json > tokens.jsonl",
  ],
  run: async ({ values, operands: [file], command }) => {
    const concurrency = integerFlag(values.concurrency, "--concurrency", { min: 1, max: 64 }, command) ?? 8;
    let total: number;
    try {
      total = await countRequests(file!);
    } catch (error) {
      throw new UsageError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code})`, command);
    }
    return withClient(values, (client) => runImport(client, file!, total, concurrency, values.json === true));
  },
});

interface Outcome {
  readonly line: number;
  readonly token?: Token;
  readonly error?: unknown;
}

/**
 * Sends up to `concurrency` lines at once but settles them in file order, so failures are reported, and tokens
 * printed, in the order of the file, and a stop leaves every earlier line settled.
 */
async function runImport(
  client: TesseraClient,
  file: string,
  total: number,
  concurrency: number,
  json: boolean,
): Promise<number> {
  const bar = new ProgressBar(total, "lines");
  const pending: Promise<Outcome>[] = [];
  const failed: number[] = [];
  const importedAfterStop: number[] = [];
  let stop: Outcome | undefined;
  let imported = 0;
  let settled = 0;
  let exitCode: ExitCode = EXIT.ok;

  const settle = (outcome: Outcome) => {
    if (outcome.token !== undefined) {
      imported++;
      if (stop !== undefined) importedAfterStop.push(outcome.line);
      if (json) printJsonLine(toApiJson(outcome.token, TOKEN_USER_DATA));
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
  for await (const text of lines(file)) {
    line++;
    if (text.trim() === "") continue;
    pending.push(importLine(client, line, text));
    if (pending.length >= concurrency) settle(await pending.shift()!);
    if (stop !== undefined) break;
  }
  for (let next = pending.shift(); next !== undefined; next = pending.shift()) settle(await next);
  bar.finish();

  printNotice(summary(file, imported, total, failed));
  if (stop !== undefined) {
    const except = importedAfterStop.length === 0 ? "" : ` (except ${listOf(importedAfterStop)}, imported)`;
    printNotice(
      `The import stopped at line ${stop.line}: import that line and the ones after it again${except}.`,
    );
    throw stop.error;
  }
  return exitCode;
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
  for await (const text of lines(file)) if (text.trim() !== "") count++;
  return count;
}

function lines(file: string): AsyncIterable<string> {
  return createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
}

function summary(file: string, imported: number, total: number, failed: readonly number[]): string {
  const head = `Imported ${imported} of ${total} token${total === 1 ? "" : "s"} from ${file}`;
  if (failed.length === 0) return `${head}.`;
  return `${head}; ${failed.length} line${failed.length === 1 ? "" : "s"} failed: ${listOf(failed)}.`;
}

function listOf(lines: readonly number[]): string {
  const shown = lines.slice(0, LISTED_LINES).join(", ");
  return lines.length > LISTED_LINES ? `${shown} and ${lines.length - LISTED_LINES} more` : shown;
}
