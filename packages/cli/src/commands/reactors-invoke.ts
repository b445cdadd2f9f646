import { TesseraError, type AcceptedInvocation, type TesseraClient } from "@tessera/sdk";
import { defineCommand, integerFlag, type Values } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { ReactorResponse, UsageError } from "../failure.js";
import { parseJson, readJson } from "../input.js";
import { printDetails, printJson, printJsonBlock, printLine, printNotice } from "../output/print.js";
import { toApiJson } from "../wire.js";

/**
 * Longer than the longest reactor timeout a server accepts (TESSERA_REACTOR_TIMEOUT_MS, at most 210 s) plus a
 * worker's start, so that a slow reactor ends in the server's own 504 rather than in a client-side timeout.
 */
const DEFAULT_TIMEOUT_S = 240;

/** spec §4.3: how long an asynchronous invocation may run, in ms; the server's own range (react-routes.ts). */
const ASYNC_TIMEOUT_MS = { min: 10_000, max: 210_000 } as const;

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
    help: `How long to wait for the answer, 1-3600 (default ${DEFAULT_TIMEOUT_S}; 30 with --callback-url)`,
  },
  "callback-url": {
    type: "string",
    value: "<url>",
    help: "Run it in the background and POST the outcome to this http(s) URL as a signed webhook",
  },
  "timeout-ms": {
    type: "string",
    value: "<ms>",
    help: `With --callback-url: how long the reactor may run, ${ASYNC_TIMEOUT_MS.min}-${ASYNC_TIMEOUT_MS.max} (default 10000)`,
  },
} as const;

/** The body of POST /reactors/{id}/react, in the SDK's spelling. */
interface ReactRequest {
  readonly args?: unknown;
  readonly callbackUrl?: string;
  readonly timeoutMs?: number;
}

export const invoke = defineCommand({
  name: "reactors invoke",
  usage:
    "<id> [--args <json> | --args-file <file.json>] [--callback-url <url> [--timeout-ms <ms>]] [options]",
  summary: "Run a reactor and print what it returns, or with --callback-url start it in the background",
  description:
    "Needs a key holding token:use. Each {{ <token id> }} in the arguments is replaced by the token's data on\n" +
    "the server, as the key's access rules show it, before the code runs; only what the reactor returns comes\n" +
    'back. Prints the result\'s raw and tokens; --json prints the API\'s answer, {"raw": ..., "tokens": ...}.\n' +
    "An error the reactor throws exits like any refused request: 4 for a 4xx (BadRequestError), 1 for a 5xx.\n" +
    "With --callback-url the server answers at once with the invocation's id and status (pending), runs the\n" +
    "reactor in the background and POSTs the outcome to the URL as a webhook signed with the tenant's secret\n" +
    "(tessera webhooks secret); follow it with tessera reactors invocation <id> <invocation id>.\n" +
    "Sent once, never retried: a reactor may have side effects (a charge).",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...INVOKE_FLAGS, ...SERVER_FLAGS },
  examples: [
    `tessera reactors invoke 01a20106-5a15-738a-9c3b-16c2d95e47cf --args '{"card": "{{ 01a2025e-7d0d-7099-9e1c-d6c03700e713 }}"}'`,
    "tessera reactors invoke 01a20106-5a15-738a-9c3b-16c2d95e47cf --args-file args.json --json | jq .raw",
    "tessera reactors invoke 01a20106-5a15-738a-9c3b-16c2d95e47cf --args-file args.json --callback-url https://api.example.com/tessera-hooks --timeout-ms 60000",
  ],
  run: async ({ values, operands: [id], command }) => {
    const request = await reactRequest(values, command);
    const timeout = integerFlag(values.timeout, "--timeout", { min: 1, max: 3600 }, command);
    const { callbackUrl } = request;
    if (callbackUrl !== undefined) {
      // The server answers once the invocation is stored, so the client's usual timeout fits.
      return withClient(
        values,
        async (client) => {
          showAccepted(id!, await client.reactors.reactAsync(id!, { ...request, callbackUrl }), values.json);
          return 0;
        },
        timeout === undefined ? {} : { timeoutMs: timeout * 1000 },
      );
    }
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
 * The body of POST /reactors/{id}/react that the flags describe, checked before anything is read or sent.
 * `--timeout-ms` is how long the reactor may run in the background; the server refuses it without a callback URL
 * (synchronous runs have the server's own limit), so the CLI does too, and `--timeout` is the wait for the answer.
 */
async function reactRequest(values: Values<typeof INVOKE_FLAGS>, command: string): Promise<ReactRequest> {
  if (values.args !== undefined && values["args-file"] !== undefined) {
    throw new UsageError("--args and --args-file both give the arguments: pass one or the other", command);
  }
  const callbackUrl = values["callback-url"];
  if (values["timeout-ms"] !== undefined && callbackUrl === undefined) {
    throw new UsageError(
      "--timeout-ms applies only with --callback-url (to wait longer for a synchronous answer, use --timeout)",
      command,
    );
  }
  const timeoutMs = integerFlag(values["timeout-ms"], "--timeout-ms", ASYNC_TIMEOUT_MS, command);
  const background = {
    ...(callbackUrl !== undefined && { callbackUrl }),
    ...(timeoutMs !== undefined && { timeoutMs }),
  };
  // Neither JSON error quotes the text: the arguments may hold card data rather than token ids.
  if (values.args !== undefined) return { args: parseJson(values.args, "--args", command), ...background };
  if (values["args-file"] !== undefined) {
    return { args: await readJson(values["args-file"], "--args-file", command), ...background };
  }
  return background;
}

/**
 * A reactor may answer with a response of its own (CustomHttpResponseError): a 2xx comes back as the answer, any
 * other status as an error whose JSON body is not one of the server's problems. That one is reported as the
 * reactor's, not as the server refusing the request. A body that is not JSON at all came from a proxy.
 */
async function react(client: TesseraClient, id: string, request: ReactRequest): Promise<unknown> {
  try {
    return await client.reactors.react(id, request.args === undefined ? {} : { args: request.args });
  } catch (error) {
    const chosenByReactor =
      error instanceof TesseraError &&
      typeof error.body !== "string" &&
      !(error.type ?? "").startsWith("urn:tessera:problem:");
    if (chosenByReactor) throw new ReactorResponse(error.status, error.body);
    throw error;
  }
}

function showAccepted(reactorId: string, accepted: AcceptedInvocation, json: boolean | undefined): void {
  if (json === true) {
    printJson(toApiJson(accepted));
    return;
  }
  printDetails([
    ["id", accepted.id],
    ["status", accepted.status],
  ]);
  printNotice(`Follow it with: tessera reactors invocation ${reactorId} ${accepted.id}`);
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
