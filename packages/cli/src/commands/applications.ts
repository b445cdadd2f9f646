import type {
  AccessRule,
  Application,
  ApplicationWithKey,
  CreateApplicationInput,
  Permission,
  UpdateApplicationInput,
} from "@tessera/sdk";
import { defineCommand, paging, type Group, type Values } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { UsageError } from "../failure.js";
import { assertAlone, readJson } from "../input.js";
import { printAll, printPage, type Listing } from "../output/listing.js";
import { printDetails, printJson, printLine, printNotice, printTable } from "../output/print.js";
import { fromApiJson, toApiJson } from "../wire.js";

const GRANT_FLAGS = {
  permission: {
    type: "string",
    multiple: true,
    value: "<permission>",
    help: "A permission, e.g. token:use (every container) or application:read",
  },
  rule: {
    type: "string",
    multiple: true,
    value: "<rule>",
    help: "An access rule, <container>=<transform>:<permission>,... (see above)",
  },
  "rule-file": {
    type: "string",
    value: "<file>",
    help: "Access rules as a JSON array, as in the API (- for stdin)",
  },
} as const;

const BODY_FLAG = {
  body: {
    type: "string",
    value: "<file>",
    help: "The whole request body as JSON, as in the API (- for stdin), instead of flags",
  },
} as const;

const RULE_SYNTAX =
  "A rule written as /pci/=mask:token:read,token:search grants token:read and token:search on the tokens in\n" +
  "/pci/ and below, their data masked; transforms are reveal, mask and redact. Rules get priorities 1, 2, ...\n" +
  "in the order given (the first that applies wins). For descriptions, use --rule-file with the API's JSON.";

const create = defineCommand({
  name: "applications create",
  usage: "--name <name> --type <type> [--permission <p>]... [--rule <rule>]... [options]",
  summary: "Create an Application; prints it with its API key, which is shown only this once",
  description: RULE_SYNTAX,
  flags: {
    name: { type: "string", value: "<name>", help: "1-200 characters" },
    type: { type: "string", value: "<type>", help: "private, public or management" },
    ...GRANT_FLAGS,
    "expires-at": {
      type: "string",
      value: "<time>",
      help: "When it expires, ISO 8601 (2030-01-01T00:00:00Z)",
    },
    ...BODY_FLAG,
    ...SERVER_FLAGS,
  },
  examples: [
    "tessera applications create --name backend --type private --rule '/pci/=reveal:token:create,token:read'",
    "tessera applications create --name auditor --type management --permission application:read",
    "tessera applications create --body application.json --json | jq -r .key",
  ],
  run: async ({ values, command }) => {
    assertAlone(values, "body", ["name", "type", "permission", "rule", "rule-file", "expires-at"], command);
    const input =
      values.body === undefined
        ? {
            name: required(values.name, "--name", command),
            type: required(values.type, "--type", command) as CreateApplicationInput["type"],
            ...(await grants(values, command)),
            ...(values["expires-at"] !== undefined && { expiresAt: values["expires-at"] }),
          }
        : fromApiJson<CreateApplicationInput>(await readJson(values.body, "--body", command));
    return withClient(values, async (client) => {
      showWithKey(await client.applications.create(input), values.json);
      return 0;
    });
  },
});

const APPLICATIONS: Listing<Application> = {
  noun: "Application",
  columns: [
    { header: "ID" },
    { header: "NAME", max: 40 },
    { header: "TYPE" },
    { header: "PERMISSIONS", max: 48 },
    { header: "RULES" },
    { header: "CREATED" },
  ],
  row: (app) => [
    app.id,
    app.name,
    app.type,
    app.permissions.join(","),
    String(app.rules.length),
    app.createdAt,
  ],
  toJson: (app) => toApiJson(app),
};

const list = defineCommand({
  name: "applications list",
  usage: "[--page <n> | --all] [--size <n>] [--id <id>]... [options]",
  summary: "List the tenant's Applications, a page at a time (without their keys)",
  description: "--all follows every page; with --json it prints one Application per line (JSON Lines).",
  flags: {
    page: { type: "string", value: "<n>", help: "Page number, from 1 (default 1)" },
    size: { type: "string", value: "<n>", help: "Applications per page, 1-100 (default 20)" },
    all: { type: "boolean", help: "Every page, not just one" },
    id: { type: "string", multiple: true, value: "<id>", help: "Only this Application" },
    ...SERVER_FLAGS,
  },
  run: async ({ values, command }) => {
    const { page, size } = paging(values, command);
    const filter = {
      ...(values.id !== undefined && { ids: values.id }),
      ...(size !== undefined && { size }),
    };
    return withClient(values, async (client) => {
      if (values.all === true) await printAll(client.applications.listAll(filter), APPLICATIONS, values.json);
      else
        printPage(
          await client.applications.list({ ...filter, ...(page !== undefined && { page }) }),
          APPLICATIONS,
          values.json,
        );
      return 0;
    });
  },
});

const get = defineCommand({
  name: "applications get",
  usage: "<id> [options]",
  summary: "Show one Application with its rules",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...SERVER_FLAGS },
  run: ({ values, operands: [id] }) =>
    withClient(values, async (client) => {
      show(await client.applications.get(id!), values.json);
      return 0;
    }),
});

const update = defineCommand({
  name: "applications update",
  usage: "<id> [--name <name>] [--permission <p>]... [--rule <rule>]... [options]",
  summary: "Change an Application's name, permissions or rules; its key keeps working",
  description:
    "What you leave out keeps its current value: the Application is read first and sent back whole (the API\n" +
    "replaces name, permissions and rules together). --permission replaces every permission, --rule or\n" +
    "--rule-file every rule; to empty a list, send the whole body with --body. The type and expiry cannot\n" +
    `change.\n\n${RULE_SYNTAX}`,
  operands: { min: 1, max: 1, name: "<id>" },
  flags: {
    name: { type: "string", value: "<name>", help: "The new name" },
    ...GRANT_FLAGS,
    ...BODY_FLAG,
    ...SERVER_FLAGS,
  },
  run: async ({ values, operands: [id], command }) => {
    assertAlone(values, "body", ["name", "permission", "rule", "rule-file"], command);
    const body =
      values.body === undefined
        ? undefined
        : fromApiJson<UpdateApplicationInput>(await readJson(values.body, "--body", command));
    const changes = await grants(values, command);
    return withClient(values, async (client) => {
      let input = body;
      if (input === undefined) {
        const current = await client.applications.get(id!);
        input = {
          name: values.name ?? current.name,
          permissions: changes.permissions ?? current.permissions,
          rules: changes.rules ?? current.rules,
        };
      }
      show(await client.applications.update(id!, input), values.json);
      return 0;
    });
  },
});

const regenerate = defineCommand({
  name: "applications regenerate",
  usage: "<id> [options]",
  summary: "Issue a new API key for an Application; the old key stops working at once",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...SERVER_FLAGS },
  run: ({ values, operands: [id] }) =>
    withClient(values, async (client) => {
      showWithKey(await client.applications.regenerateKey(id!), values.json);
      return 0;
    }),
});

const remove = defineCommand({
  name: "applications delete",
  usage: "<id> [options]",
  summary: "Delete an Application; its key stops working at once",
  description: "Prints nothing with --json: the exit code says whether it was deleted.",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: { ...SERVER_FLAGS },
  run: ({ values, operands: [id] }) =>
    withClient(values, async (client) => {
      await client.applications.delete(id!);
      if (values.json !== true) printLine(`Deleted Application ${id}.`);
      return 0;
    }),
});

export const applications: Group = {
  name: "applications",
  summary: "Applications hold the API keys of a tenant, with their permissions and access rules.",
  commands: [create, list, get, update, regenerate, remove],
};

function required(value: string | undefined, flag: string, command: string): string {
  if (value === undefined)
    throw new UsageError(`missing ${flag} (or pass the whole request with --body)`, command);
  return value;
}

type GrantValues = Values<typeof GRANT_FLAGS>;

/** The permissions and rules the flags give; a list no flag mentions is left out (undefined). */
async function grants(
  values: GrantValues,
  command: string,
): Promise<{ permissions?: Permission[]; rules?: AccessRule[] }> {
  if (values.rule !== undefined && values["rule-file"] !== undefined) {
    throw new UsageError("--rule and --rule-file both set the rules: pass one or the other", command);
  }
  let rules: AccessRule[] | undefined;
  if (values.rule !== undefined) rules = values.rule.map((text, i) => parseRule(text, i + 1, command));
  if (values["rule-file"] !== undefined) {
    const file = await readJson(values["rule-file"], "--rule-file", command);
    if (!Array.isArray(file)) throw new UsageError("--rule-file must hold a JSON array of rules", command);
    rules = fromApiJson<AccessRule[]>(file);
  }
  return {
    ...(values.permission !== undefined && { permissions: values.permission as Permission[] }),
    ...(rules !== undefined && { rules }),
  };
}

/** `/pci/=mask:token:read,token:search` → a rule; the server checks the container, transform and permissions. */
function parseRule(text: string, priority: number, command: string): AccessRule {
  const match = /^([^=]+)=([a-z]+):(.+)$/.exec(text);
  if (match === null) {
    throw new UsageError(
      `--rule '${text}' is not <container>=<transform>:<permission>,... (e.g. /pci/=mask:token:read)`,
      command,
    );
  }
  const [, container, transform, permissions] = match;
  return {
    priority,
    container: container!,
    transform: transform as AccessRule["transform"],
    permissions: permissions!.split(",").map((p) => p.trim()) as AccessRule["permissions"],
  };
}

function show(app: Application, json: boolean | undefined, key?: string): void {
  if (json === true) {
    printJson(toApiJson(app));
    return;
  }
  printDetails([
    ["id", app.id],
    ["name", app.name],
    ["type", app.type],
    ["tenant_id", app.tenantId],
    ["permissions", app.permissions.length === 0 ? "(none)" : app.permissions.join(", ")],
    ["expires_at", app.expiresAt],
    ["created_at", app.createdAt],
    ["created_by", app.createdBy],
    ["modified_at", app.modifiedAt],
    ["modified_by", app.modifiedBy],
    ["key", key],
  ]);
  if (app.rules.length > 0) {
    printLine();
    printTable(
      [
        { header: "PRIORITY" },
        { header: "CONTAINER" },
        { header: "TRANSFORM" },
        { header: "PERMISSIONS" },
        { header: "DESCRIPTION", max: 60 },
      ],
      app.rules.map((rule) => [
        String(rule.priority),
        rule.container ?? "",
        rule.transform,
        rule.permissions.join(","),
        rule.description ?? "",
      ]),
    );
  }
}

function showWithKey(app: ApplicationWithKey, json: boolean | undefined): void {
  show(app, json, app.key);
  if (json !== true) printNotice("The key is shown only now: store it somewhere safe.");
}
