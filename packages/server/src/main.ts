import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { pino, type Logger } from "pino";
import { startExpirySweeper } from "./server/expiry-sweeper.js";
import { createApplicationService, type ApplicationService } from "./applications/service.js";
import { systemClock, type Clock } from "./clock.js";
import { loadConfig, type Config } from "./config.js";
import { createKeyring } from "./crypto/keyring.js";
import { createKeyRotation, type KeyRotation } from "./keys/rotation.js";
import { resolveMasterKey } from "./master-key.js";
import { createReactorRuntime, type ReactorRuntime } from "./reactors/runtime.js";
import { createReactorService, type ReactorService } from "./reactors/service.js";
import { buildApp, REDACTED_LOG_PATHS } from "./server/app.js";
import { openStore, type Store } from "./storage/database.js";
import { migrateToLatest } from "./storage/migrate.js";
import { createTenantKeys } from "./tenants/keys.js";
import { createTenantService, type CreatedTenant, type TenantService } from "./tenants/service.js";
import { createExpressionEngine } from "./tokens/expressions.js";
import { createTokenService, type TokenService } from "./tokens/service.js";

export interface Vault {
  readonly store: Store;
  readonly applications: ApplicationService;
  readonly reactors: ReactorService;
  readonly reactorRuntime: ReactorRuntime;
  readonly tenants: TenantService;
  readonly tokens: TokenService;
  readonly keys: KeyRotation;
  close(): Promise<void>;
}

export interface Output {
  write(text: string): unknown;
}

export function createLogger(config: Pick<Config, "logLevel">): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACTED_LOG_PATHS, censor: "[redacted]" } });
}

/** Opens the store, migrates it, checks the master key and wires the services: everything but HTTP. */
export async function openVault(config: Config, log: Logger, clock: Clock = systemClock): Promise<Vault> {
  const masterKey = resolveMasterKey(config.masterKey);
  if (masterKey.generatedAt !== undefined) {
    log.warn(
      { path: masterKey.generatedAt },
      "DEVELOPMENT MODE: generated a master key file next to the data. Anyone who reads both can decrypt " +
        "every token. In production set TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE from a secret store.",
    );
  }
  const store = openStore(config.database);
  try {
    const applied = await migrateToLatest(store);
    if (applied.length > 0) log.info({ migrations: applied }, "applied migrations");
    const keyring = createKeyring(masterKey.key);
    const tenants = createTenantService({ store, keyring, clock });
    await tenants.verifyMasterKey();
    const applications = createApplicationService({ db: store.db, reads: store, clock });
    const tenantKeys = createTenantKeys({ db: store.db, keyring, clock });
    const tokens = createTokenService({
      store,
      keys: tenantKeys,
      expressions: createExpressionEngine(),
      clock,
    });
    const reactors = createReactorService({ db: store.db, keys: tenantKeys, clock });
    const keys = createKeyRotation({ store, keyring, clock });
    const reactorRuntime = createReactorRuntime(config.reactors);
    return {
      store,
      applications,
      reactors,
      reactorRuntime,
      tenants,
      tokens,
      keys,
      close: async () => {
        await reactorRuntime.close();
        await store.close();
      },
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

/** Creates the bootstrap tenant on first start and prints a generated key once (DESIGN §3). */
export async function bootstrap(
  vault: Vault,
  config: Config,
  out: Output,
): Promise<CreatedTenant | undefined> {
  const created = await vault.tenants.bootstrap(
    config.bootstrapKey === undefined ? {} : { key: config.bootstrapKey },
  );
  if (created === undefined) return undefined;
  if (config.bootstrapKey === undefined) {
    out.write(
      [
        "",
        "==================================================================",
        " Tessera created the bootstrap tenant and its management key.",
        " It is shown ONCE; store it in your secret manager now:",
        "",
        `   SVC-API-KEY: ${created.key}`,
        "",
        " Lost it? `npx tessera init --regenerate-bootstrap-key` issues a new one.",
        "==================================================================",
        "",
      ].join("\n"),
    );
  } else {
    out.write("Tessera created the bootstrap tenant; its management key is TESSERA_BOOTSTRAP_KEY.\n");
  }
  return created;
}

export function buildVaultApp(vault: Vault, config: Config, log: Logger | false): Promise<FastifyInstance> {
  return buildApp({
    applications: vault.applications,
    reactors: vault.reactors,
    reactorRuntime: vault.reactorRuntime,
    tenants: vault.tenants,
    tokens: vault.tokens,
    readiness: { check: () => vault.store.ping() },
    bodyLimit: config.bodyLimit,
    logger: log,
  });
}

/** The OpenAPI document, generated from the route schemas of a real (in-memory) instance. */
export async function openApiDocument(): Promise<unknown> {
  const config = loadConfig({
    TESSERA_DATABASE_URL: "sqlite::memory:",
    TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
    TESSERA_LOG_LEVEL: "silent",
  });
  const vault = await openVault(config, createLogger(config));
  try {
    const app = await buildVaultApp(vault, config, false);
    await app.ready();
    const document = app.swagger();
    await app.close();
    return document;
  } finally {
    await vault.close();
  }
}

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly url: string;
  /** Stops accepting connections, lets in-flight requests finish, then closes the store. */
  close(): Promise<void>;
}

export interface ServeOptions {
  readonly log?: Logger;
  readonly clock?: Clock;
}

export async function serve(config: Config, out: Output, options: ServeOptions = {}): Promise<RunningServer> {
  const log = options.log ?? createLogger(config);
  const vault = await openVault(config, log, options.clock);
  let app: FastifyInstance | undefined;
  try {
    const created = await bootstrap(vault, config, out);
    app = await buildVaultApp(vault, config, log);
    const url = await app.listen({ host: config.host, port: config.port });
    const stopSweeper = startExpirySweeper(
      { applications: () => vault.applications.sweepExpired(), tokens: () => vault.tokens.sweepExpired() },
      config.sweepIntervalMs,
      log,
    );
    if (created === undefined) {
      out.write(
        `Tessera is listening on ${url}. The management key was shown at first start ` +
          "(or is TESSERA_BOOTSTRAP_KEY); `npx tessera init --regenerate-bootstrap-key` issues a new one.\n",
      );
    } else {
      out.write(`Tessera is listening on ${url}.\n`);
    }
    const running = app;
    return {
      app: running,
      url,
      close: async () => {
        await stopSweeper();
        await running.close();
        await vault.close();
      },
    };
  } catch (error) {
    await app?.close();
    await vault.close();
    throw error;
  }
}
