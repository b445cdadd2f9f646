import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../../cli/test/processes.js";
import { ManualClock } from "../../../test/harness.js";
import { createFakeKms, type FakeKms } from "../../../test/kms.js";
import { DecryptionError } from "../../crypto/cipher.js";
import { createKeyring, tenantKeyContext } from "../../crypto/keyring.js";
import { createLogger } from "../../observability/logging.js";
import { commandProvider } from "./command.js";
import {
  PROBE_CONTEXT,
  createMasterKeyCustody,
  MasterKeyUnavailableError,
  type MasterKeyCustody,
} from "./custody.js";
import type { MasterKeyProvider } from "./provider.js";

const TTL_MS = 60_000;

describe("the master key's custody: a cache of unwrapped tenant keys, and the provider's state", () => {
  let kms: FakeKms;
  let provider: MasterKeyProvider;
  let custody: MasterKeyCustody;
  let clock: ManualClock;
  let lines: Record<string, unknown>[];

  beforeEach(async () => {
    kms = createFakeKms({ timeoutMs: 5_000 });
    provider = commandProvider(kms.settings);
    const probeKey = randomBytes(32);
    const probe = { key: probeKey, wrapped: await provider.wrap(probeKey, PROBE_CONTEXT) };
    clock = new ManualClock();
    lines = [];
    const log = createLogger("info", { write: (line: string) => lines.push(JSON.parse(line)) });
    custody = createMasterKeyCustody(provider, { probe, ttlMs: TTL_MS, clock, log });
  });

  afterEach(async () => {
    await custody.close();
    for (const pid of kms.pids()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    kms.remove();
  });

  /** A tenant key wrapped by the KMS directly, which the cache has never seen. */
  const wrappedElsewhere = async (context: string) => {
    const key = randomBytes(32);
    return { key, wrapped: await provider.wrap(key, context) };
  };

  it(
    "serves the keys it holds through an outage, refuses the rest with a 503, and recovers by itself",
    { timeout: 60_000 },
    async () => {
      const keyring = createKeyring(custody);
      const a = await keyring.newKey("tenant-a", "data", 1);
      const c = await wrappedElsewhere(tenantKeyContext("tenant-c", "data", 1));
      const aKey = await keyring.unwrap("tenant-a", a);
      const callsBefore = kms.calls().length;

      kms.setMode("fail");
      // Cached when it was made: no call to the KMS at all.
      expect((await keyring.unwrap("tenant-a", a)).equals(aKey)).toBe(true);
      expect(kms.calls()).toHaveLength(callsBefore);
      const refused = await custody
        .unwrap(c.wrapped, tenantKeyContext("tenant-c", "data", 1))
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(MasterKeyUnavailableError);
      expect(refused).toMatchObject({ status: 503, code: "master-key-unavailable", retryAfterSeconds: 5 });
      expect(custody.status()).toEqual({ state: "unavailable", cachedKeys: 1 });

      // A wrap has nothing cached to fall back on.
      await expect(keyring.newKey("tenant-b", "data", 1)).rejects.toBeInstanceOf(MasterKeyUnavailableError);

      // The lifetime is over: the cached key stops serving too.
      clock.advance(TTL_MS);
      await expect(keyring.unwrap("tenant-a", a)).rejects.toBeInstanceOf(MasterKeyUnavailableError);
      expect(custody.status()).toEqual({ state: "unavailable", cachedKeys: 0 });

      // Back: the provider is tried again every 5 s and found answering, with no request needed.
      kms.setMode("ok");
      await waitUntil(
        () => custody.status().state === "available",
        15_000,
        () => "the provider to be available",
      );
      expect((await custody.unwrap(c.wrapped, tenantKeyContext("tenant-c", "data", 1))).equals(c.key)).toBe(
        true,
      );
      expect((await keyring.unwrap("tenant-a", a)).equals(aKey)).toBe(true);

      // One line when it went, one when it came back; the reason is the command's, scrubbed.
      const warnings = lines.filter((line) => line.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({
        provider: "command",
        key_version: "command:fake-kms/tessera",
        reason: expect.stringMatching(
          /exited with code 7: An error occurred \(AccessDeniedException\).*\[redacted\]/,
        ),
      });
      expect(lines.filter((line) => line.msg === "master key provider answers again")).toHaveLength(1);
    },
  );

  it(
    "never makes a request wait for a key in use: it is unwrapped again in the background",
    { timeout: 60_000 },
    async () => {
      const context = tenantKeyContext("tenant-a", "data", 1);
      const { key, wrapped } = await wrappedElsewhere(context);
      expect((await custody.unwrap(wrapped, context)).equals(key)).toBe(true);
      const decrypts = () => kms.calls().filter((call) => call === "decrypt").length;
      expect(decrypts()).toBe(1);

      // In the first half of its lifetime it is simply served.
      clock.advance(TTL_MS / 2 - 1);
      await custody.unwrap(wrapped, context);
      expect(decrypts()).toBe(1);

      // In the second half, the request is answered from memory at once, even with a KMS that never answers...
      kms.setMode("hang");
      clock.advance(1);
      const before = Date.now();
      expect((await custody.unwrap(wrapped, context)).equals(key)).toBe(true);
      expect(Date.now() - before).toBeLessThan(1_000);
      // ...while the KMS is asked again behind it (and times out here, which marks the provider unavailable).
      await waitUntil(
        () => custody.status().state === "unavailable",
        15_000,
        () => "the refresh to time out",
      );

      // With a KMS that answers, the refresh extends the key's life past the first TTL.
      kms.setMode("ok");
      await waitUntil(
        () => custody.status().state === "available",
        15_000,
        () => "the provider to be available",
      );
      const refreshed = decrypts();
      await custody.unwrap(wrapped, context);
      await waitUntil(
        () => decrypts() > refreshed,
        15_000,
        () => "the background refresh",
      );
      clock.advance(TTL_MS / 2 + 1);
      kms.setMode("fail");
      expect((await custody.unwrap(wrapped, context)).equals(key)).toBe(true);
    },
  );

  it("asks the KMS once for a key many requests need at the same moment", async () => {
    const context = tenantKeyContext("tenant-a", "data", 1);
    const { key, wrapped } = await wrappedElsewhere(context);
    const keys = await Promise.all(Array.from({ length: 20 }, () => custody.unwrap(wrapped, context)));
    for (const each of keys) expect(each.equals(key)).toBe(true);
    expect(kms.calls().filter((call) => call === "decrypt")).toHaveLength(1);
  });

  it("tells a wrapped key that does not open from a provider that does not answer", async () => {
    const context = tenantKeyContext("tenant-a", "data", 1);
    const { wrapped } = await wrappedElsewhere(context);
    // Moved to another row: the KMS opens it, the context does not match.
    await expect(custody.unwrap(wrapped, tenantKeyContext("tenant-b", "data", 1))).rejects.toThrow(
      DecryptionError,
    );
    // Changed bytes: the KMS itself refuses (exit 3), which could be an outage; the probe still opens, so it is
    // the key's fault, and the provider is not marked down for it.
    const changed = Buffer.from(wrapped);
    changed[10] = changed[10] === 0x41 ? 0x42 : 0x41;
    await expect(custody.unwrap(changed, context)).rejects.toThrow(DecryptionError);
    expect(custody.status().state).toBe("available");
    expect(lines.filter((line) => line.level === 40)).toEqual([]);
  });
});
