import { defineCommand, integerFlag, type Group } from "../args.js";
import { CommandFailure, UsageError } from "../failure.js";
import { ProgressBar } from "../progress.js";
import { ONLY_TENANTS, withServerConfig } from "./server.js";

const rotate = defineCommand({
  name: "keys rotate",
  usage: "[--tenant <id>]...",
  summary: "Add a newer data-key version; new writes use it, reads accept every version",
  description: "Runs against the store directly, with the server's environment (see .env.example).",
  flags: {
    tenant: ONLY_TENANTS,
  },
  run: ({ values }) =>
    withServerConfig(async ({ server, config, log }) => {
      const vault = await server.openVault(config, log);
      try {
        for (const { tenantId, version } of await vault.keys.rotate(values.tenant)) {
          process.stdout.write(`tenant ${tenantId}: data key version ${version}\n`);
        }
      } finally {
        await vault.close();
      }
      process.stderr.write("Rotated. Run 'tessera keys rewrap' to re-encrypt existing tokens.\n");
      return 0;
    }),
});

const rewrap = defineCommand({
  name: "keys rewrap",
  usage: "[--batch-size <n>]",
  summary: "Re-encrypt tokens sealed under older data keys with the newest one",
  description:
    "Batched, safe while the server runs, and resumable: run it again after a stop. Shows a progress bar per\n" +
    "tenant on stderr. Runs against the store directly, with the server's environment (see .env.example).",
  flags: {
    "batch-size": { type: "string", value: "<n>", help: "Tokens per batch, 1-10000 (default 500)" },
  },
  run: async ({ values, command }) => {
    const batchSize =
      integerFlag(values["batch-size"], "--batch-size", { min: 1, max: 10_000 }, command) ?? 500;
    return withServerConfig(async ({ server, config, log }) => {
      const vault = await server.openVault(config, log);
      let bar: { tenantId: string; bar: ProgressBar } | undefined;
      try {
        const resealed = await vault.keys.rewrap({
          batchSize,
          onProgress: ({ tenantId, done, total }) => {
            if (bar?.tenantId !== tenantId) {
              bar?.bar.finish();
              bar = { tenantId, bar: new ProgressBar(total, "tokens", { suffix: `tenant ${tenantId}` }) };
            }
            bar.bar.update(done);
          },
        });
        bar?.bar.finish();
        process.stderr.write(`Re-encrypted ${resealed} tokens.\n`);
      } finally {
        await vault.close();
      }
      return 0;
    });
  },
});

const rotateMaster = defineCommand({
  name: "keys rotate-master",
  usage: "--to <file>",
  summary: "Re-wrap every tenant key under another master key (a new raw key, an HSM, a KMS)",
  description:
    "<file> holds the new master key's settings as NAME=value lines: TESSERA_MASTER_KEY_PROVIDER and its\n" +
    "provider's variables (see .env.example). The keys are unwrapped with the configured master key (and\n" +
    "TESSERA_MASTER_KEY_PREVIOUS_FILE's), so instances that read both keep serving. Resumable: run it again after a\n" +
    "stop. Shows a progress bar on stderr; each tenant's re-wrap is in its audit log. Runs against the store\n" +
    "directly, with the server's environment. Procedure: docs/keys.md#rotating-the-master-key.",
  flags: {
    to: { type: "string", value: "<file>", help: "The new master key's settings (NAME=value lines)" },
  },
  run: ({ values, command }) => {
    const file = values.to;
    if (file === undefined) throw new UsageError("--to <file> is required", command);
    return withServerConfig(async ({ server, config, log }) => {
      const target = server.loadMasterKeyFile(file);
      const to = await server.openTargetProvider(target);
      let bar: ProgressBar | undefined;
      try {
        const vault = await server.openVault(config, log);
        try {
          const result = await vault.masterKeys.rewrapAll(to, {
            onProgress: ({ done, total }) => {
              bar ??= new ProgressBar(total, "keys", { suffix: `to ${to.keyVersion}` });
              bar.update(done);
            },
          });
          bar?.finish();
          if (result.remaining > 0) {
            throw new CommandFailure(
              `${result.remaining} tenant keys are still wrapped by another master key (written meanwhile by ` +
                "instances that do not wrap with the new one): run the command again",
            );
          }
          process.stderr.write(
            `Re-wrapped ${result.rewrapped} tenant keys; every key is now wrapped by ${to.keyVersion}.\n` +
              "Configure the new master key on every instance, then remove TESSERA_MASTER_KEY_PREVIOUS_FILE and retire the old key.\n",
          );
        } finally {
          await vault.close();
        }
      } finally {
        await to.close();
      }
      return 0;
    });
  },
});

export const keys: Group = {
  name: "keys",
  summary: "Data-key and master key rotation, run against the store with the server's environment.",
  commands: [rotate, rewrap, rotateMaster],
};
