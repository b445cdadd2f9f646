import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DecryptionError } from "../crypto/cipher.js";
import { sealData } from "../tokens/sealing.js";
import { openConfiguration, sealConfiguration } from "./sealing.js";

const key = { version: 3, key: randomBytes(32) };
const tenant = "tenant-a";
const reactor = "reactor-a";

describe("reactor configuration sealing", () => {
  it("round-trips the configuration and names the key version", () => {
    const configuration = { API_KEY: "sk_test_123", ünï: "çødé", empty: "" };
    const sealed = sealConfiguration(key, tenant, reactor, configuration);
    expect(sealed.keyVersion).toBe(3);
    expect(Buffer.from(sealed.ciphertext, "base64").toString("latin1")).not.toContain("sk_test_123");
    expect(openConfiguration(key.key, tenant, reactor, sealed)).toEqual(configuration);
  });

  it("does not open under another reactor, tenant or key", () => {
    const sealed = sealConfiguration(key, tenant, reactor, { a: "b" });
    expect(() => openConfiguration(key.key, tenant, "reactor-b", sealed)).toThrow(DecryptionError);
    expect(() => openConfiguration(key.key, "tenant-b", reactor, sealed)).toThrow(DecryptionError);
    expect(() => openConfiguration(randomBytes(32), tenant, reactor, sealed)).toThrow(DecryptionError);
  });

  it("does not open a token's ciphertext: the AAD names what was sealed", () => {
    const token = sealData(key, tenant, reactor, { a: "b" });
    expect(() => openConfiguration(key.key, tenant, reactor, token)).toThrow(DecryptionError);
  });
});
