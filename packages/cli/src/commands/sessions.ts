import type { AccessRule, AuthorizeSessionInput, Permission } from "@tessera/sdk";
import { defineCommand, type Group } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { UsageError } from "../failure.js";
import { assertAlone, readJson } from "../input.js";
import { printJson, printNotice } from "../output/print.js";
import { fromApiJson } from "../wire.js";

const authorize = defineCommand({
  name: "sessions authorize",
  usage: "--nonce <nonce> [--permission <p>]... [--rule-file <file>] [--expires-at <time>] [options]",
  summary: "Authorize a session a browser created, by its nonce, with a private key",
  description:
    "The backend half of the browser flow (docs/sessions.md): a page creates a session with a public key and\n" +
    "hands you its nonce; this grants the session key what you give, never more than the calling private\n" +
    "Application holds. --permission grants a token permission on every token that Application reaches;\n" +
    "--rule-file gives rules scoped by conditions (the API's JSON: [{priority, conditions: [{attribute: id |\n" +
    "container, operator: equals | starts_with, value}], transform, permissions}]). A nonce authorizes once;\n" +
    "an unknown, used or expired one is refused. Sent once, never retried.",
  flags: {
    nonce: { type: "string", value: "<nonce>", help: "The nonce POST /sessions returned to the page" },
    permission: {
      type: "string",
      multiple: true,
      value: "<permission>",
      help: "A token permission, e.g. token:read",
    },
    "rule-file": {
      type: "string",
      value: "<file>",
      help: "Condition rules as a JSON array, as in the API (- for stdin)",
    },
    "expires-at": {
      type: "string",
      value: "<time>",
      help: "End the session then instead, ISO 8601 (up to the server's maximum)",
    },
    body: {
      type: "string",
      value: "<file>",
      help: "The whole request body as JSON, as in the API (- for stdin), instead of flags",
    },
    ...SERVER_FLAGS,
  },
  examples: [
    'tessera sessions authorize --nonce "$NONCE" --permission token:read',
    'tessera sessions authorize --nonce "$NONCE" --rule-file card-only.json --expires-at 2030-01-01T00:05:00Z',
    "tessera sessions authorize --body authorize.json",
  ],
  run: async ({ values, command }) => {
    assertAlone(values, "body", ["nonce", "permission", "rule-file", "expires-at"], command);
    let input: AuthorizeSessionInput;
    if (values.body !== undefined) {
      input = fromApiJson<AuthorizeSessionInput>(await readJson(values.body, "--body", command));
    } else {
      if (values.nonce === undefined || values.nonce === "") {
        throw new UsageError("give --nonce (or the whole body with --body)", command);
      }
      const rules =
        values["rule-file"] === undefined
          ? undefined
          : fromApiJson<AccessRule[]>(await readJson(values["rule-file"], "--rule-file", command));
      input = {
        nonce: values.nonce,
        ...(values.permission !== undefined && { permissions: values.permission as Permission[] }),
        ...(rules !== undefined && { rules }),
        ...(values["expires-at"] !== undefined && { expiresAt: values["expires-at"] }),
      };
    }
    return withClient(values, async (client) => {
      await client.sessions.authorize(input);
      if (values.json === true) printJson({ authorized: true });
      else printNotice("Session authorized.");
      return 0;
    });
  },
});

export const sessions: Group = {
  name: "sessions",
  summary: "Sessions: short-lived keys for browsers and apps, authorized by a backend.",
  commands: [authorize],
};
