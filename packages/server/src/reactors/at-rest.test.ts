import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  expectProblem,
  startTestServer,
  type TestServer,
} from "../../test/harness.js";
import { createAuditRecorder } from "../audit/recorder.js";
import { createKeyring } from "../crypto/keyring.js";
import { createKeyRotation } from "../keys/rotation.js";
import { tokenResealing } from "../tokens/resealing.js";
import { reactorResealing } from "./resealing.js";
import { type Store } from "../storage/database.js";
import { createTenantKeys } from "../keys/tenant-keys.js";
import { createReactorService, type ReactorService } from "./service.js";

const CODE = "module.exports = async ({ configuration }) => ({ raw: Object.keys(configuration) });";

/**
 * What the store holds for a reactor: its configuration only as ciphertext bound to the row, a version that
 * grows with every update, the reference to a deleted Application cleared; and what the invocation reads back.
 */
describe.skipIf(STORE_UNAVAILABLE)("reactors at rest", () => {
  let server: TestServer;
  let store: Store;
  let service: ReactorService;
  let tenantId: string;
  const logs: string[] = [];
  const secret = `sk_live_${randomBytes(18).toString("hex")}`;

  const row = (id: string) =>
    store.db.selectFrom("reactors").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

  async function create(body: Record<string, unknown>, key?: string): Promise<string> {
    const response = await server.request("POST", "/reactors", { body, ...(key && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body.id as string;
  }

  beforeAll(async () => {
    server = await startTestServer({}, { logSink: (line) => logs.push(line) });
    store = server.database.open();
    const keyring = createKeyring(Buffer.from(TEST_MASTER_KEY, "base64"));
    service = createReactorService({
      db: store.db,
      keys: createTenantKeys({ store, keyring, clock: server.clock }),
      clock: server.clock,
      audit: createAuditRecorder({ store, clock: server.clock }),
    });
    tenantId = (await server.request("GET", "/applications/key")).body.tenant_id;
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });

  it("stores the configuration encrypted: neither the row, the files nor the log hold a value", async () => {
    const name = `encrypted ${randomBytes(6).toString("hex")}`;
    const id = await create({ name, code: CODE, configuration: { STRIPE_SECRET: secret } });
    // Read back through every endpoint that shows it, so that the log has had every chance to see it.
    expect((await server.request("GET", `/reactors/${id}`)).body.configuration).toEqual({
      STRIPE_SECRET: secret,
    });
    expect((await server.request("GET", `/reactors?id=${id}`)).body.data[0].configuration.STRIPE_SECRET).toBe(
      secret,
    );

    const stored = await row(id);
    expect(stored).toMatchObject({ name, code: CODE, key_version: 1, version: 1 });
    expect(Buffer.from(stored.configuration, "base64").length).toBeGreaterThan(secret.length);
    const needles = [
      secret,
      secret.slice("sk_live_".length),
      Buffer.from(secret).toString("base64").slice(0, 24),
      Buffer.from(secret).toString("hex"),
    ];
    const rowText = JSON.stringify(stored);
    for (const needle of needles) expect(rowText).not.toContain(needle);

    if (STORE === "sqlite") {
      const file = path.join(server.database.dataDir, "tessera.db");
      const bytes = Buffer.concat(
        [file, `${file}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
      );
      // The name is stored in plain text: finding it proves the scan looks where the row is.
      expect(bytes.includes(Buffer.from(name))).toBe(true);
      for (const needle of needles) expect(bytes.includes(Buffer.from(needle))).toBe(false);
    }

    // A reactor that throws its configuration: the caller gets what it threw, the log does not.
    const user = await server.request("POST", "/applications", {
      body: { name: "user", type: "private", permissions: ["token:use"] },
    });
    const leaky = await create({
      name: `leaky ${name}`,
      code: "module.exports = async ({ configuration }) => { throw new Error(configuration.STRIPE_SECRET); };",
      configuration: { STRIPE_SECRET: secret },
    });
    const thrown = await server.request("POST", `/reactors/${leaky}/react`, { key: user.body.key, body: {} });
    expectProblem(thrown, 500, { code: "reactor-error", errors: { error: [secret] } });
    expect(logs.some((line) => line.includes('"msg":"request failed"'))).toBe(true);

    expect(logs.length).toBeGreaterThan(0);
    for (const needle of needles) expect(logs.join("\n")).not.toContain(needle);
  });

  it("binds the ciphertext to its reactor: moved to another row it does not decrypt", async () => {
    const a = await create({ name: "a", code: CODE, configuration: { key: "value of a" } });
    const b = await create({ name: "b", code: CODE, configuration: { key: "value of b" } });
    const { configuration, key_version } = await row(a);
    await store.db.updateTable("reactors").set({ configuration, key_version }).where("id", "=", b).execute();
    const response = await server.request("GET", `/reactors/${b}`);
    expectProblem(response, 500, { code: "internal" });
    expect(response.text).not.toContain("value of a");
    expect((await server.request("GET", `/reactors/${a}`)).body.configuration).toEqual({ key: "value of a" });
    await server.request("DELETE", `/reactors/${b}`);
  });

  it("moves the version on with every PUT and PATCH, and not on a refused one", async () => {
    const id = await create({ name: "versioned", code: CODE, configuration: {} });
    expect((await row(id)).version).toBe(1);
    const put = await server.request("PUT", `/reactors/${id}`, {
      body: { configuration: {}, name: "v2", code: CODE },
    });
    expect(put.status).toBe(200);
    expect((await row(id)).version).toBe(2);
    const patch = (body: unknown) =>
      server.request("PATCH", `/reactors/${id}`, { body, contentType: "application/merge-patch+json" });
    expect((await patch({ configuration: { a: "b" } })).status).toBe(204);
    expect((await row(id)).version).toBe(3);
    expect((await patch({ code: "(" })).status).toBe(400);
    expect((await row(id)).version).toBe(3);
  });

  it("gives the invocation code, version, Application and decrypted configuration, within the tenant only", async () => {
    const app = await server.request("POST", "/applications", {
      body: { name: "svc", type: "private", permissions: ["token:use"] },
    });
    const id = await create({
      name: "runnable",
      code: CODE,
      configuration: { region: "eu" },
      application: { id: app.body.id },
    });
    expect(await service.loadRunnable(tenantId, id)).toEqual({
      id,
      version: 1,
      code: CODE,
      configuration: { region: "eu" },
      applicationId: app.body.id,
    });
    const other = await server.request("POST", "/tenants", { body: { name: "elsewhere" } });
    expect(await service.loadRunnable(other.body.id, id)).toBeUndefined();
    expect(await service.loadRunnable(tenantId, "00000000-0000-4000-8000-000000000000")).toBeUndefined();

    // Deleting the Application clears the reference (ON DELETE SET NULL); the reactor runs without `svc`.
    expect((await server.request("DELETE", `/applications/${app.body.id}`)).status).toBe(204);
    expect((await row(id)).application_id).toBeNull();
    expect(await service.loadRunnable(tenantId, id)).toMatchObject({ applicationId: null, version: 1 });
  });

  it("is re-encrypted by keys rewrap under the newest data key, keeping its version", async () => {
    const id = await create({ name: "rewrapped", code: CODE, configuration: { token: secret } });
    const before = await row(id);
    const rotation = createKeyRotation({
      store,
      keyring: createKeyring(Buffer.from(TEST_MASTER_KEY, "base64")),
      clock: server.clock,
      tenantIds: async () => [tenantId],
      sealed: { reactors: reactorResealing, tokens: tokenResealing },
    });
    expect(await rotation.rotate([tenantId])).toEqual([{ tenantId, version: 2 }]);
    await rotation.rewrap({ batchSize: 2 });
    const all = await store.db.selectFrom("reactors").selectAll().where("tenant_id", "=", tenantId).execute();
    expect(all.length).toBeGreaterThan(2);
    for (const each of all) expect(each.key_version).toBe(2);
    const after = await row(id);
    expect(after).toMatchObject({ key_version: 2, version: before.version });
    expect(after.configuration).not.toBe(before.configuration);
    expect((await server.request("GET", `/reactors/${id}`)).body.configuration).toEqual({ token: secret });
    expect(await service.loadRunnable(tenantId, id)).toMatchObject({ configuration: { token: secret } });
  });
});
