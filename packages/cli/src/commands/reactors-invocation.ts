import { setTimeout as sleep } from "node:timers/promises";
import type { Invocation } from "@tessera/sdk";
import { defineCommand, integerFlag } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { CommandFailure, WaitTimedOut } from "../failure.js";
import { printDetails, printJson, printJsonBlock, printLine, printTable } from "../output/print.js";
import { toApiJson } from "../wire.js";

/** An invocation's outcome is the reactor's own JSON and a problem document, as the SDK keeps them: not renamed. */
const OUTCOME: ReadonlySet<string> = new Set(["result", "response", "error"]);

/** Polling starts quick, for a webhook that is about to go out, and slows down for one that is being retried. */
const POLL = { firstMs: 250, factor: 1.5, maxMs: 2_000 } as const;

type Delivery = NonNullable<Invocation["delivery"]>;

export const invocation = defineCommand({
  name: "reactors invocation",
  usage: "<reactor id> <invocation id> [--wait <seconds>] [options]",
  summary: "Show an asynchronous invocation: its state, outcome and webhook delivery attempts",
  description:
    "Needs the key that made the invocation (reactors invoke --callback-url); to any other Application it is\n" +
    "not found. Shows the state (pending, running, completed, failed), how many times the run was started, the\n" +
    "outcome once it has finished (result, the reactor's own response, or error) and each attempt to deliver\n" +
    "the webhook; --json prints the API's JSON.\n" +
    "--wait polls until the delivery settles: it exits 0 once the webhook is delivered, 1 when the server has\n" +
    "given up on it (after 24 hours of retries), and 3 when it is still pending after the given seconds (run\n" +
    "the command again to keep waiting). In every case it prints the invocation as last read.",
  operands: { min: 2, max: 2, name: "<reactor id> <invocation id>" },
  flags: {
    wait: {
      type: "string",
      value: "<seconds>",
      help: "Wait up to this long, 1-86400, for the webhook to be delivered or given up on",
    },
    ...SERVER_FLAGS,
  },
  examples: [
    "tessera reactors invocation 01a20106-5a15-738a-9c3b-16c2d95e47cf 01a2122f-4c1e-7c2a-9a43-7b1d0c8e5f21",
    "tessera reactors invocation 01a20106-5a15-738a-9c3b-16c2d95e47cf 01a2122f-4c1e-7c2a-9a43-7b1d0c8e5f21 --wait 300 --json | jq .delivery",
  ],
  run: async ({ values, operands: [reactorId, invocationId], command }) => {
    const wait = integerFlag(values.wait, "--wait", { min: 1, max: 86_400 }, command);
    return withClient(values, async (client) => {
      const read = () => client.reactors.getInvocation(reactorId!, invocationId!);
      const shown = wait === undefined ? await read() : await untilSettled(read, wait * 1000);
      show(shown, values.json);
      if (wait === undefined) return 0;
      const delivery = shown.delivery;
      if (delivery?.status === "delivered") return 0;
      if (delivery?.status === "failed") {
        throw new CommandFailure(
          `the webhook was not delivered: the server gave up after ${attempts(delivery.attempts.length)}` +
            `${lastAttempt(delivery)}`,
        );
      }
      throw new WaitTimedOut(
        `the webhook was not delivered within ${wait} s (${pendingState(shown)}): run the command again to keep waiting`,
      );
    });
  },
});

/** Reads the invocation until its delivery is settled (delivered or failed) or `timeoutMs` has passed. */
async function untilSettled(read: () => Promise<Invocation>, timeoutMs: number): Promise<Invocation> {
  const deadline = Date.now() + timeoutMs;
  for (let delay: number = POLL.firstMs; ; delay = Math.min(delay * POLL.factor, POLL.maxMs)) {
    const current = await read();
    const left = deadline - Date.now();
    if (isSettled(current.delivery) || left <= 0) return current;
    await sleep(Math.min(delay, left));
  }
}

function isSettled(delivery: Delivery | undefined): boolean {
  return delivery?.status === "delivered" || delivery?.status === "failed";
}

function show(shown: Invocation, json: boolean | undefined): void {
  if (json === true) {
    printJson(toApiJson(shown, OUTCOME));
    return;
  }
  printDetails([
    ["id", shown.id],
    ["reactor_id", shown.reactorId],
    ["status", shown.status],
    ["run_attempts", String(shown.runAttempts)],
    ["callback_url", shown.callbackUrl],
    ["timeout_ms", String(shown.timeoutMs)],
    ["created_at", shown.createdAt],
    ["started_at", shown.startedAt],
    ["finished_at", shown.finishedAt],
    ["error", shown.error === undefined ? undefined : problemText(shown.error)],
    ["delivery", deliveryText(shown.delivery)],
  ]);
  if (shown.result !== undefined) {
    printLine();
    printJsonBlock("result", shown.result);
  }
  if (shown.response !== undefined) {
    printLine();
    printJsonBlock("response (the reactor's own answer)", shown.response);
  }
  const tried = shown.delivery?.attempts ?? [];
  if (tried.length > 0) {
    printLine();
    printTable(
      [
        { header: "ATTEMPT" },
        { header: "AT" },
        { header: "DURATION" },
        { header: "RESPONSE" },
        { header: "ERROR" },
      ],
      tried.map((attempt) => [
        String(attempt.attempt),
        attempt.attemptedAt,
        `${attempt.durationMs} ms`,
        attempt.responseStatus === undefined ? "" : String(attempt.responseStatus),
        attempt.error ?? "",
      ]),
    );
  }
}

/** A problem document on one line, as the CLI's error lines put it: `400 Reactor error: Bad Request: card: expired`. */
function problemText(problem: NonNullable<Invocation["error"]>): string {
  const fields = Object.entries(problem.errors ?? {}).map(
    ([field, messages]) => `${field}: ${messages.join(", ")}`,
  );
  return [`${problem.status} ${problem.title}`, problem.detail, ...fields]
    .filter((part) => part !== undefined && part !== "")
    .join(": ");
}

function deliveryText(delivery: Delivery | undefined): string {
  if (delivery === undefined) return "not yet: the webhook is sent once the run has finished";
  const count = delivery.attempts.length;
  switch (delivery.status) {
    case "delivered":
      return `delivered${delivery.deliveredAt === undefined ? "" : ` at ${delivery.deliveredAt}`} (attempt ${count})`;
    case "failed":
      return `failed: given up after ${attempts(count)}`;
    case "pending":
      return `pending${count === 0 ? "" : ` after ${attempts(count)}`}${
        delivery.nextAttemptAt === undefined ? "" : `, next attempt at ${delivery.nextAttemptAt}`
      }`;
  }
}

/** Where a delivery that has not settled stands, for the message after a wait ran out. */
function pendingState(shown: Invocation): string {
  if (shown.delivery === undefined) return `the invocation is ${shown.status}`;
  return `delivery ${deliveryText(shown.delivery)}${lastAttempt(shown.delivery)}`;
}

function lastAttempt(delivery: Delivery): string {
  const last = delivery.attempts.at(-1);
  if (last === undefined) return "";
  const outcome =
    last.responseStatus === undefined ? (last.error ?? "no answer") : `answered ${last.responseStatus}`;
  return `; last attempt: ${outcome}`;
}

function attempts(count: number): string {
  return `${count} attempt${count === 1 ? "" : "s"}`;
}
