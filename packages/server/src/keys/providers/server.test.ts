import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../../cli/test/processes.js";
import {
  STORE,
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestServer,
} from "../../../test/harness.js";
import { createFakeKms, type FakeKms } from "../../../test/kms.js";
import { SOFTHSM_MISSING, createSoftHsm, type SoftHsm } from "../../../test/softhsm.js";

const CARD = "4242424242424242";

/** An Application that creates and reveals tokens everywhere, and a token of its own. */
async function tokenOf(server: TestServer, key?: string): Promise<{ key: string; id: string }> {
  const application = await server.request("POST", "/applications", {
    ...(key !== undefined && { key }),
    body: {
      name: "backend",
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
      ],
    },
  });
  expect(application.status, application.text).toBe(201);
  const created = await server.request("POST", "/tokens", {
    key: application.body.key,
    body: { data: CARD },
  });
  expect(created.status, created.text).toBe(201);
  return { key: application.body.key, id: created.body.id };
}

async function read(server: TestServer, token: { key: string; id: string }) {
  return server.request("GET", `/tokens/${token.id}`, { key: token.key });
}

/** Every wrapped tenant key in the store, as stored. */
async function wrappedKeys(server: TestServer): Promise<Buffer[]> {
  const store = server.database.open();
  try {
    const rows = await store.db.selectFrom("tenant_keys").select("wrapped_key").execute();
    return rows.map((row) => Buffer.from(row.wrapped_key, "base64"));
  } finally {
    await store.close();
  }
}

describe.skipIf(STORE_UNAVAILABLE)(
  `a vault whose master key is in a KMS (command provider, ${STORE})`,
  () => {
    let kms: FakeKms;
    let server: TestServer;
    const lines: Record<string, unknown>[] = [];

    beforeAll(async () => {
      kms = createFakeKms({ timeoutMs: 5_000 });
      server = await startTestServer(
        { ...kms.env, TESSERA_MASTER_KEY: "", TESSERA_TENANT_KEY_CACHE_SECONDS: "60" },
        { logSink: (line) => lines.push(JSON.parse(line)), logLevel: "info" },
      );
    });
    afterAll(async () => {
      await server?.close();
      for (const pid of kms?.pids() ?? []) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      kms?.remove();
    });

    it("names the provider and the key version in one start-up line, and stores only what the KMS wrapped", async () => {
      const started = lines.filter(
        (line) => typeof line.msg === "string" && line.msg.startsWith("master key:"),
      );
      expect(started).toEqual([
        expect.objectContaining({
          level: 30,
          msg: "master key: command provider, key version command:fake-kms/tessera",
          provider: "command",
          key_version: "command:fake-kms/tessera",
          key_id: "fake-kms/tessera",
          encoding: "base64",
        }),
      ]);
      const keys = await wrappedKeys(server);
      expect(keys.length).toBeGreaterThanOrEqual(5);
      for (const key of keys) expect(key[0]).toBe(0x43);
    });

    it(
      "rides out an outage on the keys it holds, says so on /readyz, refuses the rest with 503, and recovers",
      { timeout: 90_000 },
      async () => {
        const token = await tokenOf(server);
        expect((await read(server, token)).body.data).toBe(CARD);
        expect(await server.request("GET", "/readyz", { key: null })).toMatchObject({
          status: 200,
          body: { status: "ready" },
        });
        const tenants = async () => {
          const store = server.database.open();
          try {
            return (await store.db.selectFrom("tenants").select("id").execute()).length;
          } finally {
            await store.close();
          }
        };
        const tenantsBefore = await tenants();

        kms.setMode("fail");
        // A new tenant needs keys wrapped now: refused, with nothing written.
        const refused = await server.request("POST", "/tenants", { body: { name: "during the outage" } });
        expectProblem(refused, 503, { code: "master-key-unavailable", detail: /Retry after 5 s/ });
        expect(refused.headers.get("retry-after")).toBe("5");
        expect(await tenants()).toBe(tenantsBefore);
        // The token's keys were unwrapped a moment ago: it still reads, and the instance stays in rotation.
        expect((await read(server, token)).body.data).toBe(CARD);
        expect(await server.request("GET", "/readyz", { key: null })).toMatchObject({
          status: 200,
          body: { status: "degraded", master_key: "unavailable" },
        });

        // A minute later nothing the KMS unwrapped is left: reads are refused too, and /readyz fails.
        server.clock.advance(61_000);
        expectProblem(await read(server, token), 503, { code: "master-key-unavailable" });
        expectProblem(await server.request("GET", "/readyz", { key: null }), 503, {
          code: "master-key-unavailable",
        });

        // The background loops that need keys meanwhile say so once: the audit sealer has an entry to chain (an
        // Application created now, which needs no tenant key), and its audit key is no longer held.
        const audited = await server.request("POST", "/applications", {
          body: {
            name: "during the outage",
            type: "private",
            rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:read"] }],
          },
        });
        expect(audited.status, audited.text).toBe(201);
        const sealerDown = "audit sealer: the master key is unavailable; retrying until it is back";
        await waitUntil(
          () => lines.some((line) => line.msg === sealerDown),
          30_000,
          () => "the audit sealer to meet the outage",
        );
        await new Promise((resolve) => setTimeout(resolve, 2_500));

        kms.setMode("ok");
        await waitUntil(
          async () => (await server.request("GET", "/readyz", { key: null })).status === 200,
          30_000,
          () => "/readyz to pass again",
        );
        await waitUntil(
          () => lines.some((line) => line.msg === "audit sealer: the master key is back; resumed"),
          30_000,
          () => "the audit sealer to resume",
        );
        expect(lines.filter((line) => line.msg === "sealing the audit log failed")).toEqual([]);
        expect(lines.filter((line) => line.msg === sealerDown)).toHaveLength(1);
        expect((await read(server, token)).body.data).toBe(CARD);
        const created = await server.request("POST", "/tenants", { body: { name: "after the outage" } });
        expect(created.status, created.text).toBe(201);
      },
    );
  },
);

describe.skipIf(STORE_UNAVAILABLE || SOFTHSM_MISSING !== undefined)(
  `a vault whose master key is in a PKCS#11 token (SoftHSM2, ${STORE})${SOFTHSM_MISSING === undefined ? "" : ` (skipped: ${SOFTHSM_MISSING})`}`,
  () => {
    let hsm: SoftHsm;
    let server: TestServer | undefined;

    beforeAll(() => {
      hsm = createSoftHsm();
      hsm.addToken("tessera", [{ label: "tessera-master" }]);
    });
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });
    afterAll(() => hsm?.remove());

    it("tokenizes and reads back across a restart, with every tenant key wrapped by the token", async () => {
      server = await startTestServer({
        TESSERA_MASTER_KEY: "",
        TESSERA_MASTER_KEY_PROVIDER: "pkcs11",
        TESSERA_PKCS11_MODULE: hsm.module,
        TESSERA_PKCS11_TOKEN_LABEL: "tessera",
        TESSERA_PKCS11_PIN_FILE: hsm.pinFile,
        TESSERA_PKCS11_KEY_LABEL: "tessera-master",
      });
      const token = await tokenOf(server);
      expect((await read(server, token)).body.data).toBe(CARD);
      // The webhook signing secret and the audit chain use tenant keys too.
      expect((await server.request("GET", "/webhooks/secret")).status).toBe(200);

      await server.restart();
      expect((await read(server, token)).body.data).toBe(CARD);
      const keys = await wrappedKeys(server);
      expect(keys.length).toBeGreaterThanOrEqual(5);
      for (const key of keys) {
        expect(key[0]).toBe(0x50);
        expect(key).toHaveLength(1 + 12 + 32 + 16);
      }
    });
  },
);
