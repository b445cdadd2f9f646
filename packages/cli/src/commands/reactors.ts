import { readFile } from "node:fs/promises";
import { TesseraError, type CreatedReactor, type Reactor, type TesseraClient } from "@tessera/sdk";
import { defineCommand, paging, type Group, type Values } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { BadInput, UsageError } from "../failure.js";
import { readJson, readSource } from "../input.js";
import { printAll, printPage, type Listing } from "../output/listing.js";
import { printDetails, printJson, printLine } from "../output/print.js";
import { REACTOR_USER_DATA, toApiJson } from "../wire.js";
import { invocation } from "./reactors-invocation.js";
import { invoke } from "./reactors-invoke.js";

const SHOW_CONFIG_FLAG = {
  "show-config": {
    type: "boolean",
    help: "Show configuration values, not only names (they are often secrets)",
  },
} as const;

const DEPLOY_FLAGS = {
  name: { type: "string", value: "<name>", help: "1-200 characters (with --id, default: the current name)" },
  config: {
    type: "string",
    multiple: true,
    value: "<NAME=VALUE>",
    help: "A configuration entry, given to the code as configuration.NAME",
  },
  "config-file": {
    type: "string",
    value: "<file.json>",
    help: "The configuration as a JSON object of strings (- for stdin)",
  },
  application: {
    type: "string",
    value: "<id>",
    help: "The public or private Application whose identity the code's svc has",
  },
  id: { type: "string", value: "<id>", help: "Replace this reactor (PUT) instead of creating one" },
  ...SHOW_CONFIG_FLAG,
} as const;

type DeployValues = Values<typeof DEPLOY_FLAGS>;

const deploy = defineCommand({
  name: "reactors deploy",
  usage:
    "<file.js> --name <name> [--config <NAME=VALUE>]... [--config-file <file>] [--application <id>] [--id <id>] [options]",
  summary: "Create a reactor from a JavaScript file, or replace one's code with --id",
  description:
    "The file is the reactor's code, sent exactly as written (docs/reactors.md, Writing reactor code); the server\n" +
    "compiles it, and a syntax error or a module it does not allow is reported as <file>:<line>:<column> (exit 4).\n" +
    "--config-file and --config give the configuration, --config entries over the file's; values on the command\n" +
    "line can be seen by other users of the machine (ps), so keep secrets in the file.\n" +
    "With --id the reactor is replaced (PUT) with this code; what you leave out keeps its current value: the\n" +
    "name, the whole configuration (--config or --config-file replace all of it) and the Application.\n" +
    "The table shows configuration names only; --show-config adds the values, --json prints them.",
  operands: { min: 1, max: 1, name: "<file.js>" },
  flags: { ...DEPLOY_FLAGS, ...SERVER_FLAGS },
  examples: [
    "tessera reactors deploy charge.js --name 'Charge card' --config-file charge.config.json",
    "tessera reactors deploy charge.js --name 'Charge card' --config REGION=eu --application 5b2d1f0e-8c1a-4a57-9a43-0f6f3b1c2d4e",
    "tessera reactors deploy charge.js --id 01a20106-5a15-738a-9c3b-16c2d95e47cf",
    "tessera reactors deploy charge.js --name charge --json | jq -r .id",
  ],
  run: async ({ values, operands: [file], command }) => {
    if (values.id === undefined && values.name === undefined) {
      throw new UsageError("missing --name (needed unless --id names a reactor to replace)", command);
    }
    const code = await readCode(file!, command);
    const configuration = await configurationFrom(values, command);
    return withClient(values, async (client) => {
      const deployed = await locatingCodeProblems(file!, () =>
        values.id === undefined
          ? client.reactors.create({
              name: values.name!,
              code,
              // The API requires one (spec §4.3); a deploy without --config has none.
              configuration: configuration ?? {},
              ...(values.application !== undefined && { application: { id: values.application } }),
            })
          : replace(client, values.id, { code, configuration, values }),
      );
      show(deployed, values);
      return 0;
    });
  },
});

const list = defineCommand({
  name: "reactors list",
  usage: "[--name <pattern>] [--page <n> | --all] [--size <n>] [options]",
  summary: "List the tenant's reactors, oldest first, a page at a time",
  description:
    "--name finds names containing the text, case-insensitively; with a '*' the whole name must match, each '*'\n" +
    "standing for any run of characters ('stripe*'). The table shows configuration names only (--show-config\n" +
    "adds the values). --all follows every page; with --json it prints one reactor per line (JSON Lines).",
  flags: {
    name: { type: "string", value: "<pattern>", help: "Only reactors whose name matches (see above)" },
    page: { type: "string", value: "<n>", help: "Page number, from 1 (default 1)" },
    size: { type: "string", value: "<n>", help: "Reactors per page, 1-100 (default 20)" },
    all: { type: "boolean", help: "Every page, not just one" },
    ...SHOW_CONFIG_FLAG,
    ...SERVER_FLAGS,
  },
  examples: ["tessera reactors list --name 'stripe*'", "tessera reactors list --all --json | jq -r .id"],
  run: async ({ values, command }) => {
    const { page, size } = paging(values, command);
    const filter = {
      ...(values.name !== undefined && { name: values.name }),
      ...(size !== undefined && { size }),
    };
    const listing = reactorListing(values["show-config"] === true);
    return withClient(values, async (client) => {
      if (values.all === true) await printAll(client.reactors.listAll(filter), listing, values.json);
      else
        printPage(
          await client.reactors.list({ ...filter, ...(page !== undefined && { page }) }),
          listing,
          values.json,
        );
      return 0;
    });
  },
});

const get = defineCommand({
  name: "reactors get",
  usage: "<id> [options]",
  summary: "Show one reactor (configuration names only, unless --show-config)",
  description: "The code itself is in the API's JSON: tessera reactors get <id> --json | jq -r .code",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...SHOW_CONFIG_FLAG, ...SERVER_FLAGS },
  run: ({ values, operands: [id] }) =>
    withClient(values, async (client) => {
      show(await client.reactors.get(id!), values);
      return 0;
    }),
});

const remove = defineCommand({
  name: "reactors delete",
  usage: "<id> [options]",
  summary: "Delete a reactor",
  description: "Prints nothing with --json: the exit code says whether it was deleted.",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...SERVER_FLAGS },
  run: ({ values, operands: [id] }) =>
    withClient(values, async (client) => {
      await client.reactors.delete(id!);
      if (values.json !== true) printLine(`Deleted reactor ${id}.`);
      return 0;
    }),
});

export const reactors: Group = {
  name: "reactors",
  summary:
    "Reactors are JavaScript run in the vault's sandbox, with token data put into their arguments there.",
  commands: [deploy, list, get, remove, invoke, invocation],
};

/** `-` reads stdin; a file that cannot be read is a usage error, as for every other input file. */
async function readCode(file: string, command: string): Promise<string> {
  let text: string;
  if (file === "-") {
    text = await readSource("-", "<file.js>", command);
  } else {
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new UsageError(`cannot read ${file} (${reason})`, command);
    }
  }
  // Editors hide a byte-order mark; sent along, it would shift every column the server reports on line 1.
  return text.replace(/^\uFEFF/, "");
}

/**
 * The configuration the flags give, or undefined when none does. Values are passed as they are (the server checks
 * that each is a string), and no message here repeats one: they are often secrets.
 */
async function configurationFrom(
  values: DeployValues,
  command: string,
): Promise<Record<string, string> | undefined> {
  if (values.config === undefined && values["config-file"] === undefined) return undefined;
  const configuration: Record<string, unknown> = {};
  // defineProperty: a name `__proto__` stays a name instead of replacing the prototype.
  const set = (name: string, value: unknown) =>
    Object.defineProperty(configuration, name, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  if (values["config-file"] !== undefined) {
    const file = await readJson(values["config-file"], "--config-file", command);
    if (typeof file !== "object" || file === null || Array.isArray(file)) {
      throw new UsageError('--config-file must hold a JSON object, {"NAME": "value", ...}', command);
    }
    for (const [name, value] of Object.entries(file)) set(name, value);
  }
  (values.config ?? []).forEach((pair, i) => {
    const at = pair.indexOf("=");
    if (at < 1) throw new UsageError(`--config number ${i + 1} is not NAME=VALUE`, command);
    set(pair.slice(0, at), pair.slice(at + 1));
  });
  return configuration as Record<string, string>;
}

/** PUT replaces everything; what the flags leave out is read first and sent back as it is. */
async function replace(
  client: TesseraClient,
  id: string,
  given: { code: string; configuration: Record<string, string> | undefined; values: DeployValues },
): Promise<Reactor> {
  const current = await client.reactors.get(id);
  const applicationId = given.values.application ?? current.applicationId;
  return client.reactors.update(id, {
    name: given.values.name ?? current.name,
    code: given.code,
    configuration: given.configuration ?? current.configuration,
    ...(applicationId !== undefined && { application: { id: applicationId } }),
  });
}

const POSITION = /^(.*) \(line (\d+)(?:, column (\d+))?\)$/;

/**
 * A refused write whose `code` has problems is restated against the file, as a compiler would
 * (`charge.js:3:11: Unexpected token ')'`), so an editor or a terminal can jump to the spot.
 */
async function locatingCodeProblems<T>(file: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!(error instanceof TesseraError) || error.errors?.code === undefined) throw error;
    const name = file === "-" ? "<stdin>" : file;
    const located = error.errors.code.map((message) => {
      const [, text, line, column] = POSITION.exec(message) ?? [];
      if (text === undefined) return `${name}: ${message}`;
      return `${name}:${line}${column === undefined ? "" : `:${column}`}: ${text}`;
    });
    const others = Object.entries(error.errors)
      .filter(([field]) => field !== "code")
      .map(([field, messages]) => `${field}: ${messages.join(", ")}`);
    const status = `${error.status}${error.title === undefined ? "" : ` ${error.title}`}`;
    throw new BadInput(`the server refused the request (${status}): ${[...located, ...others].join("; ")}`, {
      cause: error,
    });
  }
}

function show(
  reactor: Reactor | CreatedReactor,
  values: Values<typeof SHOW_CONFIG_FLAG & typeof SERVER_FLAGS>,
): void {
  if (values.json === true) {
    printJson(toApiJson(reactor, REACTOR_USER_DATA));
    return;
  }
  // Only create's answer carries the Application itself; name it there, as it is at hand.
  const application = "application" in reactor ? reactor.application : undefined;
  const configuration = configurationText(reactor.configuration, values["show-config"] === true);
  const hidden = values["show-config"] !== true && Object.keys(reactor.configuration).length > 0;
  printDetails([
    ["id", reactor.id],
    ["name", reactor.name],
    ["tenant_id", reactor.tenantId],
    ["code", codeSummary(reactor.code)],
    ["configuration", hidden ? `${configuration} (values hidden; --show-config shows them)` : configuration],
    [
      "application_id",
      application === undefined
        ? reactor.applicationId
        : `${application.id} (${application.name}, ${application.type})`,
    ],
    ["created_at", reactor.createdAt],
    ["created_by", reactor.createdBy],
    ["modified_at", reactor.modifiedAt],
    ["modified_by", reactor.modifiedBy],
  ]);
}

function reactorListing(showConfig: boolean): Listing<Reactor> {
  return {
    noun: "reactor",
    columns: [
      { header: "ID" },
      { header: "NAME", max: 40 },
      { header: "CONFIGURATION", max: 48 },
      { header: "APPLICATION" },
      { header: "CREATED" },
    ],
    row: (reactor) => [
      reactor.id,
      reactor.name,
      Object.keys(reactor.configuration).length === 0
        ? ""
        : configurationText(reactor.configuration, showConfig),
      reactor.applicationId ?? "",
      reactor.createdAt,
    ],
    toJson: (reactor) => toApiJson(reactor, REACTOR_USER_DATA),
  };
}

/** The names, or with `showValues` the NAME=VALUE pairs, in the order the server keeps them. */
function configurationText(configuration: Record<string, string>, showValues: boolean): string {
  const entries = Object.entries(configuration);
  if (entries.length === 0) return "(none)";
  return entries.map(([name, value]) => (showValues ? `${name}=${value}` : name)).join(", ");
}

function codeSummary(code: string): string {
  const lines = code.split("\n").length - (code.endsWith("\n") ? 1 : 0);
  return `${lines} line${lines === 1 ? "" : "s"}, ${code.length} characters`;
}
