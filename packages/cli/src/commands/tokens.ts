import type { CreateTokenInput, Token } from "@tessera/sdk";
import { defineCommand, paging, type Group, type Values } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { UsageError } from "../failure.js";
import { assertAlone, keyValues, parseJson, readJson, readSource } from "../input.js";
import { printAll, printPage, type Listing } from "../output/listing.js";
import { printDetails, printJson, printLine } from "../output/print.js";
import { fromApiJson, toApiJson, TOKEN_USER_DATA } from "../wire.js";
import { importTokens } from "./tokens-import.js";

const CREATE_FLAGS = {
  type: {
    type: "string",
    value: "<type>",
    help: "card_number, social_security_number, token (default), ...",
  },
  data: { type: "string", value: "<text>", help: "The sensitive value, as a string (- reads it from stdin)" },
  "data-json": {
    type: "string",
    value: "<json>",
    help: "The value as JSON, e.g. a card object (- for stdin)",
  },
  id: { type: "string", value: "<id>", help: "Your own id (3-400 characters) or an alias expression" },
  container: {
    type: "string",
    multiple: true,
    value: "<path>",
    help: "A container, e.g. /pci/ (default: the type's)",
  },
  metadata: {
    type: "string",
    multiple: true,
    value: "<key=value>",
    help: "A metadata entry (searchable, not encrypted)",
  },
  "search-index": {
    type: "string",
    multiple: true,
    value: "<expr>",
    help: "A search index, e.g. '{{ data | last4 }}'",
  },
  "fingerprint-expression": { type: "string", value: "<expr>", help: "What the fingerprint covers" },
  mask: { type: "string", value: "<expr>", help: "The mask expression, e.g. '{{ data | reveal_last: 4 }}'" },
  "expires-at": { type: "string", value: "<time>", help: "When the token expires, ISO 8601" },
  deduplicate: {
    type: "boolean",
    help: "Return the existing token of the same type and fingerprint, if any",
  },
  body: {
    type: "string",
    value: "<file>",
    help: "The whole request body as JSON, as in the API (- for stdin)",
  },
} as const;

const TOKENS: Listing<Token> = {
  noun: "token",
  columns: [
    { header: "ID" },
    { header: "TYPE" },
    { header: "CONTAINERS", max: 30 },
    { header: "DATA", max: 32 },
    { header: "METADATA", max: 40 },
    { header: "CREATED" },
  ],
  row: (token) => [
    token.id,
    token.type,
    token.containers.join(","),
    dataOf(token),
    metadataOf(token) ?? "",
    token.createdAt ?? "",
  ],
  toJson: (token) => toApiJson(token, TOKEN_USER_DATA),
};

const create = defineCommand({
  name: "tokens create",
  usage: "(--data <text> | --data-json <json>) [--type <type>] [options]",
  summary: "Create a token and print it",
  description:
    "Data given on the command line can be seen by other users of the machine (ps) and stays in the shell's\n" +
    "history: prefer '--data -' and pipe it in, or --body with a file. Flags map to the fields of POST /tokens\n" +
    "(docs/tokens.md); --body takes that request as it is, for masks per field and everything else.",
  flags: { ...CREATE_FLAGS, ...SERVER_FLAGS },
  examples: [
    "printf %s 4242424242424242 | tessera tokens create --type card_number --data - --metadata customer=cus_1",
    `tessera tokens create --type token --data-json '{"iban":"DE89370400440532013000"}' --container /bank/`,
    "tessera tokens create --body token.json --json | jq -r .id",
  ],
  run: async ({ values, command }) => {
    const input = fromApiJson<CreateTokenInput>(await createRequest(values, command), TOKEN_USER_DATA);
    return withClient(values, async (client) => {
      show(await client.tokens.create(input), values.json);
      return 0;
    });
  },
});

const get = defineCommand({
  name: "tokens get",
  usage: "<id> [options]",
  summary: "Show one token, its data as the key's access rule shows it (revealed, masked or redacted)",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...SERVER_FLAGS },
  run: ({ values, operands: [id] }) =>
    withClient(values, async (client) => {
      show(await client.tokens.get(id!), values.json);
      return 0;
    }),
});

const search = defineCommand({
  name: "tokens search",
  usage: "[<query>...] [--page <n>] [--size <n>] [--all] [options]",
  summary: "Search tokens with the query language (docs/search.md), newest first",
  description:
    "The words of the query are joined with spaces (terms side by side mean AND); quote it for the shell.\n" +
    "No query lists every token the key may search; a query that starts with '-' (NOT) goes last, after '--'.\n" +
    "--all follows every page; with --json it prints one token per line (JSON Lines) instead of the page.",
  operands: { min: 0, max: Number.POSITIVE_INFINITY, name: "<query>" },
  flags: {
    page: { type: "string", value: "<n>", help: "Page number, from 1 (default 1)" },
    size: { type: "string", value: "<n>", help: "Tokens per page, 1-100 (default 20)" },
    all: { type: "boolean", help: "Every page, not just one" },
    ...SERVER_FLAGS,
  },
  examples: [
    "tessera tokens search 'type:card_number AND metadata.customer:cus_1'",
    "tessera tokens search 'container:\"/pci/*\" created_at:[2025-01-01 TO *]' --all --json | jq -r .id",
    "tessera tokens search -- '-type:card_number'",
  ],
  run: async ({ values, operands, command }) => {
    const { page, size } = paging(values, command);
    const query = operands.length === 0 ? undefined : operands.join(" ");
    const request = { ...(query !== undefined && { query }), ...(size !== undefined && { size }) };
    return withClient(values, async (client) => {
      if (values.all === true) await printAll(client.tokens.searchAll(request), TOKENS, values.json);
      else
        printPage(
          await client.tokens.search({ ...request, ...(page !== undefined && { page }) }),
          TOKENS,
          values.json,
        );
      return 0;
    });
  },
});

const remove = defineCommand({
  name: "tokens delete",
  usage: "<id> [options]",
  summary: "Delete a token",
  description: "Prints nothing with --json: the exit code says whether it was deleted.",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...SERVER_FLAGS },
  run: ({ values, operands: [id] }) =>
    withClient(values, async (client) => {
      await client.tokens.delete(id!);
      if (values.json !== true) printLine(`Deleted token ${id}.`);
      return 0;
    }),
});

export const tokens: Group = {
  name: "tokens",
  summary: "Tokens stand in for sensitive values; their data is shown through the key's access rules.",
  commands: [create, get, search, remove, importTokens],
};

/** The POST /tokens body the flags describe (API spelling), or the one in --body. */
async function createRequest(values: Values<typeof CREATE_FLAGS>, command: string): Promise<unknown> {
  const builders = Object.keys(CREATE_FLAGS).filter((flag) => flag !== "body");
  assertAlone(values, "body", builders, command);
  if (values.body !== undefined) return readJson(values.body, "--body", command);
  const data = await dataFrom(values, command);
  return {
    ...(values.id !== undefined && { id: values.id }),
    ...(values.type !== undefined && { type: values.type }),
    data,
    ...(values.container !== undefined && { containers: values.container }),
    ...(values.metadata !== undefined && { metadata: keyValues(values.metadata, "--metadata", command) }),
    ...(values["search-index"] !== undefined && { search_indexes: values["search-index"] }),
    ...(values["fingerprint-expression"] !== undefined && {
      fingerprint_expression: values["fingerprint-expression"],
    }),
    ...(values.mask !== undefined && { mask: values.mask }),
    ...(values["expires-at"] !== undefined && { expires_at: values["expires-at"] }),
    ...(values.deduplicate === true && { deduplicate_token: true }),
  };
}

/** `--data` is always a string and `--data-json` any JSON value; `-` reads either from stdin. */
async function dataFrom(values: Values<typeof CREATE_FLAGS>, command: string): Promise<unknown> {
  const text = values.data ?? values["data-json"];
  if (text === undefined || (values.data !== undefined && values["data-json"] !== undefined)) {
    throw new UsageError(
      "pass the data with --data or --data-json (or the whole request with --body)",
      command,
    );
  }
  const flag = values.data !== undefined ? "--data" : "--data-json";
  // A value piped in usually ends with the newline of echo or a file; it is not part of the value.
  const value = text === "-" ? (await readSource("-", flag, command)).replace(/\r?\n$/, "") : text;
  return flag === "--data" ? value : parseJson(value, flag, command);
}

function show(token: Token, json: boolean | undefined): void {
  if (json === true) {
    printJson(toApiJson(token, TOKEN_USER_DATA));
    return;
  }
  printDetails([
    ["id", token.id],
    ["type", token.type],
    ["containers", token.containers.join(", ")],
    ["data", dataOf(token)],
    ["mask", token.mask === undefined ? undefined : textOf(token.mask)],
    ["metadata", metadataOf(token)],
    ["fingerprint", token.fingerprint],
    ["fingerprint_expression", token.fingerprintExpression],
    ["search_indexes", token.searchIndexes?.length ? token.searchIndexes.join(", ") : undefined],
    ["expires_at", token.expiresAt],
    ["created_at", token.createdAt],
    ["created_by", token.createdBy],
    ["modified_at", token.modifiedAt],
    ["modified_by", token.modifiedBy],
    [
      "deduplicated",
      token._extras?.deduplicated === true ? "yes: an existing token was returned" : undefined,
    ],
  ]);
}

/** No `data` means the key's rule redacts it (or masks it and the type has no mask). */
function dataOf(token: Token): string {
  return token.data === undefined ? "(redacted)" : textOf(token.data);
}

function textOf(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function metadataOf(token: Token): string | undefined {
  const entries = Object.entries(token.metadata ?? {});
  return entries.length === 0 ? undefined : entries.map(([key, value]) => `${key}=${value}`).join(", ");
}
