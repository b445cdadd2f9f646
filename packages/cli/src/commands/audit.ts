import { defineCommand, type Group } from "../args.js";
import { ONLY_TENANTS, withServerConfig } from "./server.js";

const verify = defineCommand({
  name: "audit verify",
  usage: "[--tenant <id>]... [--json]",
  summary: "Check that no audit log entry was changed, removed or inserted",
  description:
    "Walks each tenant's chain of audit entries and recomputes every link (an HMAC under the tenant's audit\n" +
    "key). Prints each chain's head: keep it elsewhere, since removing the newest entries is only visible against\n" +
    "a head recorded earlier. Exits 1 when a chain is broken. Runs against the store directly, with the server's\n" +
    "environment (see .env.example).",
  flags: {
    tenant: ONLY_TENANTS,
    json: { type: "boolean", help: "One JSON report per tenant and line" },
  },
  run: ({ values }) =>
    withServerConfig(async ({ server, config, log }) => {
      const vault = await server.openVault(config, log);
      try {
        const reports = await vault.audit.verify(values.tenant);
        for (const report of reports) {
          if (values.json === true) {
            process.stdout.write(`${JSON.stringify(report)}\n`);
            continue;
          }
          const head =
            report.head === undefined ? "no entries sealed" : `head ${report.head.seq} ${report.head.hash}`;
          const verdict = report.problems.length === 0 ? "intact" : "BROKEN";
          process.stdout.write(
            `tenant ${report.tenantId}: ${report.rows} entries, chain ${verdict}, ${head}\n`,
          );
          for (const problem of report.problems) process.stdout.write(`  - ${problem}\n`);
          if (report.staleUnsealed > 0) {
            process.stdout.write(
              `  - ${report.staleUnsealed} entries older than 5 minutes are not sealed yet (is a server running?)\n`,
            );
          }
        }
        return reports.some((report) => report.problems.length > 0) ? 1 : 0;
      } finally {
        await vault.close();
      }
    }),
});

export const audit: Group = {
  name: "audit",
  summary: "The audit log's integrity, checked against the store with the server's environment.",
  commands: [verify],
};
