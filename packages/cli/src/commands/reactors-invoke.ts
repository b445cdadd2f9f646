import { TesseraError, type TesseraClient } from "@tessera/sdk";
import { defineCommand, integerFlag, type Values } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { ReactorResponse, UsageError } from "../failure.js";
import { parseJson, readJson } from "../input.js";
import { printJson, printJsonBlock, printLine } from "../output/print.js";

/**
 * Longer than the longest reactor timeout a server accepts (TESSERA_REACTOR_TIMEOUT_MS, at most 210 s) plus a
 * worker's start, so that a slow reactor ends in the server's own 504 rather than in a client-side timeout.
 */
const DEFAULT_TIMEOUT_S = 240;

const INVOKE_FLAGS = {
  args: {
    type: "string",
    value: "<json>",
    help: `The arguments as JSON, e.g. '{"card": "{{ <token id> }}", "amount": 1299}'`,
  },
  "args-file": { type: "string", value: "<file.json>", help: "The arguments from a JSON file (- for stdin)" },
  timeout: {
    type: "string",
    value: "<seconds>",
    help: `How long to wait for the answer, 1-3600 (default ${DEFAULT_TIMEOUT_S})`,
  },
} as const;

export const invoke = defineCommand({
  name: "reactors invoke",
  usage: "<id> [--args <json> | --args-file <file.json>] [options]",
  summary: "Run a reactor now with the given arguments and print what it returns",
  description:
    "Needs a key holding token:use. Each {{ <token id> }} in the arguments is replaced by the token's data on\n" +
    "the server, as the key's access rules show it, before the code runs; only what the reactor returns comes\n" +
    'back. Prints the result\'s raw and tokens; --json prints the API\'s answer, {"raw": ..., "tokens": ...}.\n' +
    "An error the reactor throws exits like any refused request: 4 for a 4xx (BadRequestError), 1 for a 5xx.\n" +
    "Sent once, never retried: a reactor may have side effects (a charge).",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...INVOKE_FLAGS, ...SERVER_FLAGS },
  examples: [
    `tessera reactors invoke 01a20106-5a15-738a-9c3b-16c2d95e47cf --args '{"card": "{{ 01a2025e-7d0d-7099-9e1c-d6c03700e713 }}"}'`,
    "tessera reactors invoke 01a20106-5a15-738a-9c3b-16c2d95e47cf --args-file args.json --json | jq .raw",
  ],
  run: async ({ values, operands: [id], command }) => {
    const request = await reactRequest(values, command);
    const timeout = integerFlag(values.timeout, "--timeout", { min: 1, max: 3600 }, command);
    return withClient(
      values,
      async (client) => {
        showAnswer(await react(client, id!, request), values.json);
        return 0;
      },
      { timeoutMs: (timeout ?? DEFAULT_TIMEOUT_S) * 1000 },
    );
  },
});

/**
 * The body of POST /reactors/{id}/react that the flags describe. It is built apart from the call and from how the
 * answer is shown, so that asynchronous invocation (a callback URL, answered 202) adds its flag here and its answer
 * in showAnswer.
 */
async function reactRequest(
  values: Values<typeof INVOKE_FLAGS>,
  command: string,
): Promise<{ args?: unknown }> {
  if (values.args !== undefined && values["args-file"] !== undefined) {
    throw new UsageError("--args and --args-file both give the arguments: pass one or the other", command);
  }
  // Neither JSON error quotes the text: the arguments may hold card data rather than token ids.
  if (values.args !== undefined) return { args: parseJson(values.args, "--args", command) };
  if (values["args-file"] !== undefined) {
    return { args: await readJson(values["args-file"], "--args-file", command) };
  }
  return {};
}

/**
 * A reactor may answer with a response of its own (CustomHttpResponseError): a 2xx comes back as the answer, any
 * other status as an error whose JSON body is not one of the server's problems. That one is reported as the
 * reactor's, not as the server refusing the request. A body that is not JSON at all came from a proxy.
 */
async function react(client: TesseraClient, id: string, request: { args?: unknown }): Promise<unknown> {
  try {
    return await client.reactors.react(id, request);
  } catch (error) {
    const chosenByReactor =
      error instanceof TesseraError &&
      typeof error.body !== "string" &&
      !(error.type ?? "").startsWith("urn:tessera:problem:");
    if (chosenByReactor) throw new ReactorResponse(error.status, error.body);
    throw error;
  }
}

function showAnswer(answer: unknown, json: boolean | undefined): void {
  if (json === true) {
    // A reactor's own 204 has no body: there is no JSON to print.
    if (answer !== undefined) printJson(answer);
    return;
  }
  if (!isResult(answer)) {
    printJsonBlock("The reactor answered with a response of its own:", answer ?? null);
    return;
  }
  if (!("raw" in answer) && !("tokens" in answer)) {
    printLine("The reactor returned neither raw nor tokens.");
    return;
  }
  if ("raw" in answer) printJsonBlock("raw", answer.raw);
  if ("raw" in answer && "tokens" in answer) printLine();
  if ("tokens" in answer) printJsonBlock("tokens", answer.tokens);
}

/** The server's own answer, `{raw?, tokens?}`, as opposed to a body the reactor chose. */
function isResult(answer: unknown): answer is { raw?: unknown; tokens?: unknown } {
  return (
    typeof answer === "object" &&
    answer !== null &&
    !Array.isArray(answer) &&
    Object.keys(answer).every((key) => key === "raw" || key === "tokens")
  );
}
