import type { CreateTenantInput, Tenant } from "@tessera/sdk";
import { defineCommand, type Group } from "../args.js";
import { SERVER_FLAGS, withClient } from "../connection.js";
import { UsageError } from "../failure.js";
import { assertAlone, readJson } from "../input.js";
import { printDetails, printJson, printLine, printNotice } from "../output/print.js";
import { fromApiJson, toApiJson } from "../wire.js";

const create = defineCommand({
  name: "tenants create",
  usage: "--name <name> [options]",
  summary: "Create a tenant and its first management Application, whose key is shown only this once",
  description: "Needs tenant:create, which only the bootstrap Application holds.",
  flags: {
    name: { type: "string", value: "<name>", help: "1-200 characters" },
    body: { type: "string", value: "<file>", help: "The whole request body as JSON (- for stdin)" },
    ...SERVER_FLAGS,
  },
  examples: ["tessera tenants create --name acme --json | jq -r .application.key"],
  run: async ({ values, command }) => {
    assertAlone(values, "body", ["name"], command);
    let input: CreateTenantInput;
    if (values.body !== undefined) {
      input = fromApiJson<CreateTenantInput>(await readJson(values.body, "--body", command));
    } else if (values.name !== undefined) {
      input = { name: values.name };
    } else {
      throw new UsageError("missing --name", command);
    }
    return withClient(values, async (client) => {
      const tenant = await client.tenants.create(input);
      if (values.json === true) {
        printJson(toApiJson(tenant));
        return 0;
      }
      const { application } = tenant;
      show(tenant);
      printLine();
      printLine("Its management Application:");
      printDetails([
        ["id", application.id],
        ["name", application.name],
        ["permissions", application.permissions.join(", ")],
        ["key", application.key],
      ]);
      printNotice("The key is shown only now: store it somewhere safe.");
      return 0;
    });
  },
});

const self = defineCommand({
  name: "tenants self",
  usage: "[options]",
  summary: "Show the tenant the API key belongs to (needs tenant:read)",
  flags: { ...SERVER_FLAGS },
  run: ({ values }) =>
    withClient(values, async (client) => {
      const tenant = await client.tenants.getSelf();
      if (values.json === true) printJson(toApiJson(tenant));
      else show(tenant);
      return 0;
    }),
});

const shred = defineCommand({
  name: "tenants shred",
  usage: "<id> --yes [options]",
  summary: "Destroy a tenant's keys, so that nothing it stored can be decrypted again (irreversible)",
  description:
    "Crypto-shredding (docs/keys.md#shredding-a-tenant): the tenant's keys, tokens, reactors and Applications are\n" +
    "deleted; its id and audit log remain. Needs the bootstrap key; not for the bootstrap tenant. Earlier backups\n" +
    "of the store still hold its keys wrapped by the master key: rotate the master key and retire the old one to\n" +
    "make them useless too.",
  operands: { min: 1, max: 1, name: "<id>" },
  flags: {
    yes: { type: "boolean", help: "Confirm: nothing of the tenant can be recovered afterwards" },
    ...SERVER_FLAGS,
  },
  run: ({ values, operands: [id], command }) => {
    if (values.yes !== true)
      throw new UsageError("shredding cannot be undone: add --yes to confirm", command);
    return withClient(values, async (client) => {
      const shredded = await client.tenants.shred(id!);
      if (values.json === true) {
        printJson(toApiJson(shredded));
        return 0;
      }
      const { destroyed } = shredded;
      printDetails([
        ["id", shredded.id],
        ["shredded_at", shredded.shreddedAt],
        ["tenant keys destroyed", String(destroyed.tenantKeys)],
        ["tokens deleted", String(destroyed.tokens)],
        ["reactors deleted", String(destroyed.reactors)],
        ["applications deleted", String(destroyed.applications)],
        ["files scrubbed", shredded.filesScrubbed ? "yes" : "no (see docs/keys.md#shredding-a-tenant)"],
      ]);
      return 0;
    });
  },
});

export const tenants: Group = {
  name: "tenants",
  summary: "Tenants keep their tokens, keys and Applications apart from each other's.",
  commands: [create, self, shred],
};

function show(tenant: Tenant): void {
  printDetails([
    ["id", tenant.id],
    ["name", tenant.name],
    ["created_at", tenant.createdAt],
    ["created_by", tenant.createdBy],
  ]);
}
