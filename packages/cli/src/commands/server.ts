import type * as ServerModule from "@tessera/server";
import { defineCommand } from "../args.js";
import {
  CommandFailure,
  ConfigurationError,
  EXIT,
  MasterKeyRefused,
  StoreUnavailable,
  type ExitCode,
} from "../failure.js";

type Server = typeof ServerModule;
type Config = ReturnType<Server["loadConfig"]>;
type Logger = ReturnType<Server["createLogger"]>;

export interface ServerContext {
  readonly server: Server;
  readonly config: Config;
  readonly log: Logger;
}

/**
 * Runs `work` with the server's configuration (the environment, as `tessera serve` reads it). The server's
 * modules are loaded here, on demand: they take seconds to load, which the commands that only talk to a server
 * over HTTP should not pay. The server's own errors become the CLI's here, the one place that knows them.
 */
export async function withServerConfig(work: (context: ServerContext) => Promise<number>): Promise<number> {
  const server = await import("@tessera/server");
  try {
    const config = server.loadConfig();
    return await work({ server, config, log: server.createLogger(config) });
  } catch (error) {
    throw translate(server, error);
  }
}

function translate(server: Server, error: unknown): unknown {
  if (error instanceof server.ConfigError) return new ConfigurationError(error.message);
  if (error instanceof server.StoreUnreachableError) {
    // 69 when waiting may be enough (the database is down, restarting, busy or out of disk); 78 when the
    // configuration must change (host name, credentials, TLS, a file that cannot be written).
    const { reason, retryAfterSeconds } = error.outage;
    return retryAfterSeconds !== undefined || reason === "disk-full"
      ? new StoreUnavailable(error.message)
      : new ConfigurationError(error.message);
  }
  if (error instanceof server.MigrationError) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return new CommandFailure(`${error.message}${cause}`);
  }
  if (error instanceof server.MasterKeyProviderError) {
    // An HSM or KMS that does not answer may come back by itself, like a database: 69.
    return error.failure === "unavailable"
      ? new StoreUnavailable(error.message)
      : new MasterKeyRefused(error.message, MASTER_KEY_EXIT[error.failure]);
  }
  if (error instanceof server.MasterKeyMismatchError) {
    return new MasterKeyRefused(error.message, EXIT.masterKeyMismatch);
  }
  // A command that opened the vault and then lost its HSM or KMS (`keys rotate`, `audit verify`).
  if (error instanceof server.MasterKeyUnavailableError) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return new StoreUnavailable(`the master key cannot be reached${cause}`);
  }
  if (error instanceof server.StoreNotInitializedError || error instanceof server.UnknownTenantError) {
    return new CommandFailure(error.message);
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE" || code === "ECONNREFUSED" || code === "EACCES") {
    return new CommandFailure((error as Error).message);
  }
  return error;
}

/** `--tenant <id>`, repeatable, of the vault commands that walk every tenant (keys rotate, audit verify). */
export const ONLY_TENANTS = {
  type: "string",
  multiple: true,
  value: "<id>",
  help: "Only this tenant (default: every tenant)",
} as const;

const MASTER_KEY_EXIT: Record<"module" | "token" | "login" | "key", ExitCode> = {
  module: EXIT.masterKeyModule,
  token: EXIT.masterKeyToken,
  login: EXIT.masterKeyLogin,
  key: EXIT.masterKeyLabel,
};

const SERVER_ENVIRONMENT =
  "Configuration comes from the environment (see .env.example): TESSERA_DATABASE_URL, TESSERA_MASTER_KEY, ...";

export const serve = defineCommand({
  name: "serve",
  usage: "",
  summary: "Start the vault (migrates the store and bootstraps it on first start)",
  description: `${SERVER_ENVIRONMENT}\nSIGTERM or SIGINT finishes the requests in flight, then exits 0.`,
  flags: {},
  run: () =>
    withServerConfig(async ({ server, config, log }) => {
      const running = await server.serve(config, process.stderr, { log });
      return new Promise<number>((resolve) => {
        let stopping = false;
        const stop = (signal: NodeJS.Signals) => {
          if (stopping) {
            log.warn({ signal }, "second signal: exiting without waiting");
            resolve(1);
            return;
          }
          stopping = true;
          log.info({ signal }, "shutting down: finishing in-flight requests");
          running.close().then(
            () => resolve(0),
            (err: unknown) => {
              log.error({ err }, "shutdown failed");
              resolve(1);
            },
          );
        };
        process.on("SIGTERM", stop);
        process.on("SIGINT", stop);
      });
    }),
});

export const init = defineCommand({
  name: "init",
  usage: "[--regenerate-bootstrap-key]",
  summary: "Migrate and bootstrap the store without serving; prints a generated key once",
  description: SERVER_ENVIRONMENT,
  flags: {
    "regenerate-bootstrap-key": {
      type: "boolean",
      help: "Issue a new key for the bootstrap Application (the old one stops working); recreates it, or restores its permissions, if it was deleted or stripped",
    },
  },
  run: ({ values }) =>
    withServerConfig(async ({ server, config, log }) => {
      const vault = await server.openVault(config, log);
      try {
        if (values["regenerate-bootstrap-key"] === true) {
          const key = await vault.tenants.recoverBootstrapKey();
          process.stderr.write(`New bootstrap management key (shown once):\n\n  SVC-API-KEY: ${key}\n\n`);
        } else if ((await server.bootstrap(vault, config, process.stderr)) === undefined) {
          process.stderr.write("The store is already initialized; nothing to do.\n");
        }
      } finally {
        await vault.close();
      }
      return 0;
    }),
});

export const migrate = defineCommand({
  name: "migrate",
  usage: "",
  summary: "Apply pending migrations and exit",
  description: SERVER_ENVIRONMENT,
  flags: {},
  run: () =>
    withServerConfig(async ({ server, config, log }) => {
      const vault = await server.openVault(config, log);
      await vault.close();
      process.stderr.write("The store is migrated.\n");
      return 0;
    }),
});
