import { defineCommand, integerFlag, type Group } from "../args.js";
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

export const keys: Group = {
  name: "keys",
  summary: "Data-key rotation, run against the store with the server's environment.",
  commands: [rotate, rewrap],
};
