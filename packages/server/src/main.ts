import { randomBytes } from "node:crypto";
import os from "node:os";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { startExpirySweeper } from "./jobs/expiry-sweeper.js";
import { createApplicationService, type ApplicationService } from "./applications/service.js";
import { createAuditRecorder, type AuditRecorder } from "./audit/recorder.js";
import { sealAuditLog, startAuditSealer } from "./audit/sealer.js";
import { createAuditService, type AuditService } from "./audit/service.js";
import { verifyAuditLog, type ChainReport } from "./audit/verify.js";
import { systemClock, type Clock } from "./shared/clock.js";
import { loadConfig, type Config } from "./config.js";
import { createKeyring } from "./crypto/keyring.js";
import { elementsDistDir, loadElementAssets } from "./elements/assets.js";
import type { WorkLoop } from "./jobs/work-loop.js";
import { createIdempotency, type Idempotency } from "./idempotency/service.js";
import { createKeyRotation, type KeyRotation } from "./keys/rotation.js";
import { createMasterKeyRotation, type MasterKeyRotation } from "./keys/master-rotation.js";
import type { MasterKeyCustody } from "./keys/providers/custody.js";
import { isMasterKeyFailure, openMasterKey } from "./keys/providers/open.js";
import { createLogger as createServerLogger } from "./observability/logging.js";
import { createMetrics } from "./observability/metrics.js";
import { injectFetch } from "./server/inject-fetch.js";
import { createInternalCredentials } from "./reactors/internal-credentials.js";
import { startWebhookDeliverer } from "./reactors/invocations/deliverer.js";
import { startInvocationRunner } from "./reactors/invocations/runner.js";
import { createInvocationService } from "./reactors/invocations/service.js";
import { invocationStore, type InvocationStore } from "./reactors/invocations/store.js";
import { createReactorInvocation } from "./reactors/invoke.js";
import { createReactorRuntime, instrumented, type ReactorRuntime } from "./reactors/runtime.js";
import { createReactorService, type ReactorService } from "./reactors/service.js";
import { buildApp } from "./app.js";
import { unusableStore } from "./storage/availability.js";
import { type Store } from "./storage/database.js";
import { openStore } from "./storage/open.js";
import { migrateToLatest } from "./storage/migrate.js";
import { keyStore } from "./keys/store.js";
import { createTenantKeys, type TenantKeys } from "./keys/tenant-keys.js";
import { reactorResealing } from "./reactors/resealing.js";
import { createTenantService, type CreatedTenant, type TenantService } from "./tenants/service.js";
import { tokenResealing } from "./tokens/resealing.js";
import { createExpressionEngine } from "./tokens/expressions.js";
import { createTokenService, type TokenService } from "./tokens/service.js";
import { createExplainService } from "./explain/service.js";
import { createSessionService, type SessionService } from "./sessions/service.js";
import { builtConsoleRoot } from "./console/routes.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./webhooks/backoff.js";
import { createWebhookSecrets, type WebhookSecrets } from "./webhooks/secrets.js";

export interface Vault {
  readonly store: Store;
  readonly applications: ApplicationService;
  readonly reactors: ReactorService;
  readonly reactorRuntime: ReactorRuntime;
  readonly tenants: TenantService;
  readonly tokens: TokenService;
  readonly sessions: SessionService;
  readonly keys: KeyRotation;
  /** `tessera keys rotate-master`: every tenant key re-wrapped by another master key. */
  readonly masterKeys: MasterKeyRotation;
  readonly tenantKeys: TenantKeys;
  readonly invocationStore: InvocationStore;
  readonly webhookSecrets: WebhookSecrets;
  readonly audit: {
    readonly recorder: AuditRecorder;
    readonly service: AuditService;
    /** Chains what was recorded since the last pass; the server does it every poll interval. */
    seal(): Promise<number>;
    /** `tessera audit verify`. */
    verify(tenantIds?: readonly string[]): Promise<ChainReport[]>;
  };
  readonly idempotency: Idempotency;
  /** The master key's provider behind its cache: its state is part of GET /readyz. */
  readonly masterKey: MasterKeyCustody;
  readonly clock: Clock;
  close(): Promise<void>;
}

export interface Output {
  write(text: string): unknown;
}

/** The server's logger at the configured level (observability/logging.ts: what a log line may hold). */
export function createLogger(config: Pick<Config, "logLevel">): Logger {
  return createServerLogger(config.logLevel);
}

/**
 * Opens the master key's provider, opens the store, checks the master key against the store's keys, migrates the
 * store and wires the services: everything but HTTP. The key is checked before anything is written, so that a
 * start refused for its key leaves the store as it was and creates no key file (keys/providers/open.ts).
 */
export async function openVault(config: Config, log: Logger, clock: Clock = systemClock): Promise<Vault> {
  const opening = await openMasterKey(config.masterKey, {
    ttlMs: config.tenantKeyCacheMs,
    clock,
    log,
    previous: config.previousMasterKey,
  });
  let masterKey: MasterKeyCustody | undefined;
  let store: Store;
  try {
    store = openStore(config.database);
  } catch (error) {
    await opening.abandon();
    throw error;
  }
  try {
    const custody = await opening.finish(await keyStore(store.db).onePerMasterKey());
    masterKey = custody;
    const keyring = createKeyring(custody);
    const applied = await migrateToLatest(store);
    if (applied.length > 0) log.info({ migrations: applied }, "applied migrations");
    const audit = createAuditRecorder({ store, clock });
    const tenantKeys = createTenantKeys({ store, keyring, clock });
    const tenants = createTenantService({
      store,
      keys: tenantKeys,
      clock,
      audit,
      sealAudit: () => sealAuditLog(store, tenantKeys),
    });
    const applications = createApplicationService({ db: store.db, reads: store, clock, audit });
    const sessions = createSessionService({
      db: store.db,
      clock,
      audit,
      settings: config.sessions,
      applications,
    });
    const tokens = createTokenService({
      store,
      keys: tenantKeys,
      expressions: createExpressionEngine(),
      clock,
      audit,
    });
    const reactors = createReactorService({
      db: store.db,
      reads: store,
      keys: tenantKeys,
      clock,
      audit,
      modules: config.reactors.modules,
      retired: (reactorId) => void reactorRuntime.discard(reactorId),
    });
    const keys = createKeyRotation({
      store,
      keyring,
      clock,
      tenantIds: () => tenants.ids(),
      sealed: { reactors: reactorResealing, tokens: tokenResealing },
      // Run from the command line: Tessera itself acts, so there is no actor.
      onRotated: (write, tenantId, version) =>
        audit.within(write, [
          {
            tenantId,
            actorId: null,
            action: "tenant.rotate_data_key",
            entityType: "tenant",
            entityId: tenantId,
            details: { version },
          },
        ]),
    });
    const reactorRuntime = createReactorRuntime(config.reactors, log);
    return {
      store,
      applications,
      reactors,
      reactorRuntime,
      tenants,
      tokens,
      sessions,
      keys,
      masterKeys: createMasterKeyRotation({
        store,
        from: custody,
        tenantIds: () => tenants.ids(),
        // Run from the command line: Tessera itself acts, so there is no actor.
        onRewrapped: (write, tenantId, details) =>
          audit.within(write, [
            {
              tenantId,
              actorId: null,
              action: "tenant.rotate_master_key",
              entityType: "tenant",
              entityId: tenantId,
              details,
            },
          ]),
      }),
      tenantKeys,
      invocationStore: invocationStore(store),
      webhookSecrets: createWebhookSecrets({ keys: tenantKeys, clock, audit }),
      audit: {
        recorder: audit,
        service: createAuditService({ db: store.db }),
        seal: () => sealAuditLog(store, tenantKeys),
        verify: async (tenantIds) =>
          verifyAuditLog(store, tenantKeys, clock, tenantIds ?? (await tenants.ids())),
      },
      idempotency: createIdempotency({ db: store.db, keys: tenantKeys, clock }),
      masterKey: custody,
      clock,
      close: async () => {
        await reactorRuntime.close();
        await custody.close();
        await store.close();
      },
    };
  } catch (error) {
    if (masterKey === undefined) await opening.abandon();
    else await masterKey.close();
    await store.close();
    // A database that cannot be used is named as such (where, and why), not as the first step it failed; a
    // master key that cannot be used, as that.
    throw isMasterKeyFailure(error) ? error : unusableStore(error, config.database);
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

export interface VaultApp {
  readonly app: FastifyInstance;
  /** Starts this instance's share of the background work; the function it returns stops it. */
  startWork(log: Logger): () => Promise<void>;
}

/** The HTTP app over a vault, and the background work that runs asynchronous invocations and their webhooks. */
export async function buildVaultApp(vault: Vault, config: Config, log: Logger | false): Promise<VaultApp> {
  // Filled in below: the reactor engine's in-process fetch needs the app it is part of.
  const built: { app?: FastifyInstance } = {};
  let runner: WorkLoop | undefined;
  let deliverer: WorkLoop | undefined;
  const credentials = createInternalCredentials((tenantId, id) =>
    vault.applications.principalById(tenantId, id),
  );
  const metrics = config.metrics.enabled
    ? createMetrics({
        reactors: vault.reactorRuntime,
        maxWorkers: config.reactors.maxWorkers,
        backlog: () => vault.invocationStore.backlog(),
        database: () => vault.store.poolStats(),
      })
    : undefined;
  const invocation = createReactorInvocation({
    // Synchronous and asynchronous invocations both run through here, so both are counted.
    runtime:
      metrics === undefined
        ? vault.reactorRuntime
        : instrumented(vault.reactorRuntime, (outcome, cold) => metrics.observeInvocation(outcome, cold)),
    tokens: vault.tokens,
    credentials,
    fetch: injectFetch(() => {
      if (built.app === undefined) throw new Error("the app is not built yet");
      return built.app;
    }),
    loadReactor: (tenantId, id, configVersion) => vault.reactors.loadRunnable(tenantId, id, configVersion),
    modules: config.reactors.modules,
  });
  const invocations = createInvocationService({
    store: vault.invocationStore,
    keys: vault.tenantKeys,
    invocation,
    clock: vault.clock,
    callbackUrls: { allowPrivate: config.webhooks.allowPrivate },
    maxQueuedPerTenant: config.jobs.maxQueuedPerTenant,
    enqueued: () => runner?.wake(),
  });
  const elementAssets = await loadElementAssets(elementsDistDir());
  if (elementAssets === undefined && log !== false) {
    log.warn("@tessera/elements is not built (npm run build): /elements/ is not served");
  }
  const app = await buildApp({
    applications: vault.applications,
    reactors: vault.reactors,
    invocation,
    invocations,
    credentials,
    webhookSecrets: vault.webhookSecrets,
    audit: vault.audit.service,
    idempotency: vault.idempotency,
    tenants: vault.tenants,
    tokens: vault.tokens,
    sessions: vault.sessions,
    cors: config.cors,
    explain: createExplainService({
      applications: vault.applications,
      tokens: vault.tokens,
      sessions: vault.sessions,
      audit: vault.audit.recorder,
    }),
    readiness: { check: () => vault.store.ping(), masterKey: () => vault.masterKey.status() },
    bodyLimit: config.bodyLimit,
    limits: config.limits,
    ...(config.console.enabled && { console: { root: builtConsoleRoot() } }),
    ...(metrics !== undefined && { metrics: { metrics, token: config.metrics.token } }),
    ...(elementAssets !== undefined && { elements: { assets: elementAssets, ...config.elements } }),
    logger: log,
  });
  built.app = app;
  return {
    app,
    startWork(workLog) {
      // Fences this instance's claims: another instance never mistakes them for its own.
      const owner = `${os.hostname()}:${process.pid}:${randomBytes(6).toString("hex")}`;
      const common = { store: vault.invocationStore, keys: vault.tenantKeys, clock: vault.clock, owner };
      const started = startInvocationRunner({
        ...common,
        invocation,
        concurrency: config.jobs.concurrency,
        pollMs: config.jobs.pollMs,
        finished: () => deliverer?.wake(),
        log: workLog,
      });
      runner = started;
      const delivering = startWebhookDeliverer({
        ...common,
        signingKeys: (tenantId) => vault.webhookSecrets.signingKeys(tenantId),
        concurrency: config.jobs.concurrency * 2,
        perDestination: config.webhooks.maxConcurrentPerDestination,
        pollMs: config.jobs.pollMs,
        requestTimeoutMs: config.webhooks.timeoutMs,
        allowPrivate: config.webhooks.allowPrivate,
        retry: retryPolicy(config),
        log: workLog,
      });
      deliverer = delivering;
      const sealer = startAuditSealer({ seal: () => vault.audit.seal(), log: workLog }, config.jobs.pollMs);
      return async () => {
        // Stopping the workers ends the runs under way; the runner hands them back for another instance or
        // the next start instead of reporting them failed.
        await Promise.all([started.stop(), vault.reactorRuntime.close()]);
        await delivering.stop();
        await sealer.stop();
      };
    },
  };
}

function retryPolicy(config: Config): RetryPolicy {
  return { ...DEFAULT_RETRY_POLICY, baseMs: config.webhooks.retryBaseMs };
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
    const { app } = await buildVaultApp(vault, config, false);
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
    const built = await buildVaultApp(vault, config, log);
    app = built.app;
    const url = await app.listen({ host: config.host, port: config.port });
    const stopWork = built.startWork(log);
    const stopSweeper = startExpirySweeper(
      {
        applications: () => vault.applications.sweepExpired(),
        tokens: () => vault.tokens.sweepExpired(),
        sessions: () => vault.sessions.sweepExpired(),
        "idempotency keys": () => vault.idempotency.sweepExpired(),
        "reactor invocations": () =>
          vault.invocationStore.deleteSettledBefore(
            new Date(vault.clock.now().getTime() - config.jobs.retentionMs).toISOString(),
          ),
        // Deliveries whose destination stayed paused past their retry window, with the last attempt's margin.
        "undelivered webhooks": () => {
          const now = vault.clock.now().getTime();
          const policy = retryPolicy(config);
          return vault.invocationStore.failUndeliveredBefore(
            new Date(now - policy.windowMs - policy.capMs).toISOString(),
            new Date(now).toISOString(),
          );
        },
        "webhook destinations": () =>
          vault.invocationStore.deleteIdleDestinationsBefore(
            new Date(vault.clock.now().getTime() - config.jobs.retentionMs).toISOString(),
            vault.clock.now().toISOString(),
          ),
      },
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
        await stopWork();
        await vault.close();
      },
    };
  } catch (error) {
    await app?.close();
    await vault.close();
    throw error;
  }
}
