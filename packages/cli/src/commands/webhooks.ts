import type { WebhookSecret } from "@tessera/sdk";
import { defineCommand, type Group } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { printDetails, printJson, printNotice } from "../output/print.js";
import { toApiJson } from "../wire.js";

/** Whoever holds the secret can sign messages the receivers will trust (docs/reactors.md, The signing secret). */
const SECRET_WARNING =
  "This is a secret: anyone who has it can forge webhooks your receivers will accept. Keep it out of logs, " +
  "tickets and chat.";

const secret = defineCommand({
  name: "webhooks secret",
  usage: "[options]",
  summary: "Print the secret that signs the tenant's webhooks, to verify them with",
  description:
    "Needs a management key holding webhook:read. Prints the secret (whsec_..., the form Standard Webhooks\n" +
    "libraries and the SDK's verifyWebhook take), its version and, after a rotation, until when the previous\n" +
    "secret signs too. A reminder that it is a secret goes to stderr.",
  flags: { ...SERVER_FLAGS },
  examples: ["tessera webhooks secret", "tessera webhooks secret --json | jq -r .secret > webhook-secret"],
  run: ({ values }) =>
    withClient(values, async (client) => {
      show(await client.webhooks.getSecret(), values.json);
      printNotice(SECRET_WARNING);
      return 0;
    }),
});

const rotateSecret = defineCommand({
  name: "webhooks rotate-secret",
  usage: "[options]",
  summary: "Replace the webhook signing secret; the previous one keeps signing for 24 hours",
  description:
    "Needs a management key holding webhook:update. Prints the new secret as 'webhooks secret' does. For 24\n" +
    "hours every webhook carries a signature under each secret, so receivers can move to the new one without\n" +
    "refusing a message; rotating again within that time ends the older overlap at once. Sent once, never retried.",
  flags: { ...SERVER_FLAGS },
  examples: ["tessera webhooks rotate-secret", "tessera webhooks rotate-secret --json | jq -r .secret"],
  run: ({ values }) =>
    withClient(values, async (client) => {
      const rotated = await client.webhooks.rotateSecret();
      show(rotated, values.json);
      printNotice(SECRET_WARNING);
      if (rotated.previousValidUntil !== undefined) {
        printNotice(
          `The previous secret also signs until ${rotated.previousValidUntil}: give your receivers the new one before then.`,
        );
      }
      return 0;
    }),
});

export const webhooks: Group = {
  name: "webhooks",
  summary: "Webhooks carry the outcome of asynchronous reactor invocations, signed with the tenant's secret.",
  commands: [secret, rotateSecret],
};

function show(current: WebhookSecret, json: boolean | undefined): void {
  if (json === true) {
    printJson(toApiJson(current));
    return;
  }
  printDetails([
    ["secret", current.secret],
    ["version", String(current.version)],
    ["created_at", current.createdAt],
    ["previous_valid_until", current.previousValidUntil],
  ]);
}
