import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ManualClock,
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  createTestDatabase,
  type TestDatabase,
} from "../../../test/harness.js";
import { createKeyring } from "../../crypto/keyring.js";
import { createLogger } from "../../observability/logging.js";
import { type Store } from "../../storage/database.js";
import { migrateToLatest } from "../../storage/migrate.js";
import { createTenantKeys } from "../../keys/tenant-keys.js";
import { createTenantService } from "../../tenants/service.js";
import { MAX_RUN_ATTEMPTS, startInvocationRunner } from "./runner.js";
import { openJson, sealJson } from "./sealing.js";
import { invocationStore, type InvocationStore } from "./store.js";

/** An invocation whose instances kept dying mid-run is failed, not run a fourth time. */
describe.skipIf(STORE_UNAVAILABLE)("the invocation runner", () => {
  let database: TestDatabase;
  let store: Store;
  let invocations: InvocationStore;
  let tenantId: string;
  const clock = new ManualClock(Date.parse("2026-01-01T00:00:00.000Z"));
  const keyring = createKeyring(Buffer.from(TEST_MASTER_KEY, "base64"));

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateToLatest(store);
    tenantId = (await createTenantService({
      store,
      keys: createTenantKeys({ store, keyring, clock }),
      clock,
    }).bootstrap({}))!.tenant.id;
    invocations = invocationStore(store);
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it(`fails an invocation interrupted ${MAX_RUN_ATTEMPTS} times without running it again`, async () => {
    const keys = createTenantKeys({ store, keyring, clock });
    const key = await keys.current(tenantId, "data");
    const id = randomUUID();
    await invocations.insert({
      id,
      tenantId,
      reactorId: randomUUID(),
      requestedBy: randomUUID(),
      callbackUrl: "https://hooks.example.com/",
      timeoutMs: 10_000,
      args: sealJson(key, tenantId, id, "args", {}),
      keyVersion: key.version,
      createdAt: clock.now().toISOString(),
    });
    // Three instances claim the run and die with it: their leases simply run out.
    for (let attempt = 1; attempt <= MAX_RUN_ATTEMPTS; attempt++) {
      const now = clock.now().toISOString();
      const claim = await invocations.claimRun({ owner: `dead-${attempt}`, now, leaseUntil: () => now });
      expect(claim?.runAttempts).toBe(attempt);
      clock.advance(1);
    }

    let ran = false;
    let finished = 0;
    const runner = startInvocationRunner({
      store: invocations,
      keys,
      clock,
      owner: "survivor",
      concurrency: 1,
      pollMs: 20,
      invocation: {
        load: () => {
          ran = true;
          return Promise.reject(new Error("must not be loaded"));
        },
        execute: () => {
          ran = true;
          return Promise.reject(new Error("must not run"));
        },
      },
      finished: () => void finished++,
      log: createLogger("silent"),
    });
    try {
      const deadline = Date.now() + 10_000;
      while (finished === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await runner.stop();
    }
    expect(ran).toBe(false);
    const record = (await invocations.findById(tenantId, id))?.record;
    expect(record).toMatchObject({
      status: "failed",
      runAttempts: MAX_RUN_ATTEMPTS + 1,
      deliveryStatus: "pending",
    });
    expect(openJson(key.key, tenantId, id, "outcome", record!.outcome!)).toEqual({
      status: "failed",
      error: {
        type: "urn:tessera:problem:reactor-failed",
        title: "Reactor failed",
        status: 500,
        detail: `The invocation was interrupted ${MAX_RUN_ATTEMPTS} times (the instances running it stopped).`,
      },
    });
  });
});
