import { parseArgs } from "node:util";
import {
  ConfigError,
  MasterKeyMismatchError,
  MigrationError,
  StoreNotInitializedError,
  UnknownTenantError,
  bootstrap,
  createLogger,
  loadConfig,
  openVault,
  serve,
} from "@tessera/server";

const HELP = `Usage: tessera <command> [options]

Commands:
  serve                               Start the vault (migrates the store and bootstraps it on first start)
  init                                Migrate and bootstrap the store without serving; prints the key once
  init --regenerate-bootstrap-key     Issue a new key for the bootstrap Application (the old one stops working);
                                      recreates it, or restores its permissions, if it was deleted or stripped
  migrate                             Apply pending migrations and exit
  keys rotate [--tenant <id>]...      Add a newer data-key version (every tenant, or the ones named); new
                                      writes use it, reads accept every version
  keys rewrap [--batch-size <n>]      Re-encrypt tokens sealed under older data keys with the newest one;
                                      batched, safe while serving, resumable (run it again after a stop)

Options:
  -h, --help                          Show this help

Configuration comes from the environment (see .env.example): TESSERA_DATABASE_URL, TESSERA_MASTER_KEY, ...
`;

/** Exit codes scripts can rely on: 0 ok, 1 failure, 2 usage error, 78 configuration error (sysexits EX_CONFIG). */
const EXIT = { ok: 0, failure: 1, usage: 2, config: 78 } as const;

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        help: { type: "boolean", short: "h" },
        "regenerate-bootstrap-key": { type: "boolean" },
        tenant: { type: "string", multiple: true },
        "batch-size": { type: "string" },
      },
    });
  } catch (error) {
    process.stderr.write(`tessera: ${(error as Error).message}\nRun 'tessera --help' for usage.\n`);
    return EXIT.usage;
  }
  const [command, ...rest] = parsed.positionals;
  const subcommand = command === "keys" ? rest.shift() : undefined;
  if (parsed.values.help === true || command === undefined) {
    process.stdout.write(HELP);
    return command === undefined && parsed.values.help !== true ? EXIT.usage : EXIT.ok;
  }
  if (rest.length > 0) {
    process.stderr.write(`tessera: unexpected argument '${rest[0]}'\nRun 'tessera --help' for usage.\n`);
    return EXIT.usage;
  }

  const config = loadConfig();
  const log = createLogger(config);
  switch (command) {
    case "serve":
      return runServe(config, log);
    case "init": {
      const vault = await openVault(config, log);
      try {
        if (parsed.values["regenerate-bootstrap-key"] === true) {
          const key = await vault.tenants.recoverBootstrapKey();
          process.stderr.write(`New bootstrap management key (shown once):\n\n  SVC-API-KEY: ${key}\n\n`);
        } else if ((await bootstrap(vault, config, process.stderr)) === undefined) {
          process.stderr.write("The store is already initialized; nothing to do.\n");
        }
      } finally {
        await vault.close();
      }
      return EXIT.ok;
    }
    case "migrate": {
      const vault = await openVault(config, log);
      await vault.close();
      process.stderr.write("The store is migrated.\n");
      return EXIT.ok;
    }
    case "keys":
      return runKeys(subcommand, parsed.values, config, log);
    default:
      process.stderr.write(`tessera: unknown command '${command}'\nRun 'tessera --help' for usage.\n`);
      return EXIT.usage;
  }
}

async function runServe(config: ReturnType<typeof loadConfig>, log: ReturnType<typeof createLogger>) {
  const server = await serve(config, process.stderr, { log });
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn({ signal }, "second signal: exiting without waiting");
        resolve(EXIT.failure);
        return;
      }
      stopping = true;
      log.info({ signal }, "shutting down: finishing in-flight requests");
      server.close().then(
        () => resolve(EXIT.ok),
        (err: unknown) => {
          log.error({ err }, "shutdown failed");
          resolve(EXIT.failure);
        },
      );
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}

async function runKeys(
  subcommand: string | undefined,
  options: { tenant?: string[]; "batch-size"?: string },
  config: ReturnType<typeof loadConfig>,
  log: ReturnType<typeof createLogger>,
): Promise<number> {
  if (subcommand !== "rotate" && subcommand !== "rewrap") {
    process.stderr.write(
      "tessera: use 'tessera keys rotate' or 'tessera keys rewrap'\nRun 'tessera --help' for usage.\n",
    );
    return EXIT.usage;
  }
  const batchSize = Number(options["batch-size"] ?? "500");
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    process.stderr.write("tessera: --batch-size must be an integer from 1 to 10000\n");
    return EXIT.usage;
  }
  const vault = await openVault(config, log);
  try {
    if (subcommand === "rotate") {
      for (const { tenantId, version } of await vault.keys.rotate(options.tenant)) {
        process.stdout.write(`tenant ${tenantId}: data key version ${version}\n`);
      }
      process.stderr.write("Rotated. Run 'tessera keys rewrap' to re-encrypt existing tokens.\n");
    } else {
      const resealed = await vault.keys.rewrap({ batchSize, onProgress: drawProgress });
      process.stderr.write(`\nRe-encrypted ${resealed} tokens.\n`);
    }
  } finally {
    await vault.close();
  }
  return EXIT.ok;
}

/** One line per tenant, redrawn in place on a terminal; plain lines otherwise (logs, CI). */
function drawProgress({ tenantId, done, total }: { tenantId: string; done: number; total: number }): void {
  const width = 30;
  const filled = total === 0 ? width : Math.round((done / total) * width);
  const bar = `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} tokens  tenant ${tenantId}`;
  if (process.stderr.isTTY) process.stderr.write(`\r${bar}`);
  else if (done === total || done === 0) process.stderr.write(`${bar}\n`);
}

function explain(error: unknown): number {
  if (error instanceof ConfigError) {
    process.stderr.write(`tessera: ${error.message}\n`);
    return EXIT.config;
  }
  if (
    error instanceof MasterKeyMismatchError ||
    error instanceof MigrationError ||
    error instanceof StoreNotInitializedError ||
    error instanceof UnknownTenantError
  ) {
    const cause =
      error instanceof MigrationError && error.cause instanceof Error ? `: ${error.cause.message}` : "";
    process.stderr.write(`tessera: ${error.message}${cause}\n`);
    return EXIT.failure;
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE" || code === "ECONNREFUSED" || code === "EACCES") {
    process.stderr.write(`tessera: ${(error as Error).message}\n`);
    return EXIT.failure;
  }
  process.stderr.write(
    `tessera: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return EXIT.failure;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => process.exit(explain(error)),
);
