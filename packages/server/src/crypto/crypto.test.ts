import { createDecipheriv, createHmac, randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey } from "./api-keys.js";
import { DecryptionError, decrypt, encrypt } from "./cipher.js";
import { TENANT_KEY_PURPOSES, createKeyring } from "./keyring.js";
import { fingerprintOf } from "./blind-index.js";
import { secretKey } from "./secret-key.js";

describe("cipher", () => {
  const key = randomBytes(32);

  it("round-trips any plaintext and never repeats a ciphertext", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.string(), (bytes, aad) => {
        const plaintext = Buffer.from(bytes);
        const a = encrypt(key, plaintext, aad);
        const b = encrypt(key, plaintext, aad);
        expect(a.equals(b)).toBe(false);
        expect(decrypt(key, a, aad).equals(plaintext)).toBe(true);
      }),
    );
  });

  it("keeps one KeyObject per key buffer, each holding exactly that buffer's key", () => {
    const first = randomBytes(32);
    const same = Buffer.from(first);
    expect(secretKey(first)).toBe(secretKey(first));
    // Equal bytes in another buffer, and other bytes, get KeyObjects of their own: nothing is matched by value.
    expect(secretKey(same)).not.toBe(secretKey(first));
    expect(secretKey(first).export().equals(first)).toBe(true);
    const other = randomBytes(32);
    expect(secretKey(other).export().equals(other)).toBe(true);
  });

  it("writes what a plain AES-256-GCM and HMAC-SHA256 under the raw key read back (the format is unchanged)", () => {
    const sealed = encrypt(key, Buffer.from("4242424242424242"), "tenant-a:token-1");
    const decipher = createDecipheriv("aes-256-gcm", key, sealed.subarray(1, 13), { authTagLength: 16 });
    decipher.setAAD(Buffer.from("tenant-a:token-1", "utf8"));
    decipher.setAuthTag(sealed.subarray(13, 29));
    const plaintext = Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
    expect(plaintext.toString("utf8")).toBe("4242424242424242");
    expect(fingerprintOf(key, "4242")).toBe(
      createHmac("sha256", key).update("4242", "utf8").digest("base64url"),
    );
  });

  it("fails to decrypt under another AAD, another key, or after any bit flip", () => {
    const sealed = encrypt(key, Buffer.from("123-45-6789"), "tenant-a:token-1");
    expect(() => decrypt(key, sealed, "tenant-b:token-1")).toThrow(DecryptionError);
    expect(() => decrypt(randomBytes(32), sealed, "tenant-a:token-1")).toThrow(DecryptionError);
    fc.assert(
      fc.property(fc.nat({ max: sealed.length * 8 - 1 }), (bit) => {
        const tampered = Buffer.from(sealed);
        tampered[bit >> 3]! ^= 1 << (bit & 7);
        expect(() => decrypt(key, tampered, "tenant-a:token-1")).toThrow(DecryptionError);
      }),
    );
    expect(() => decrypt(key, Buffer.alloc(10), "x")).toThrow(DecryptionError);
  });
});

describe("keyring", () => {
  it("wraps fresh keys per tenant and purpose that only unwrap in their own place", async () => {
    const keyring = createKeyring(randomBytes(32));
    const keys = await keyring.newTenantKeys("tenant-a");
    expect(keys.map((k) => k.purpose)).toEqual([...TENANT_KEY_PURPOSES]);
    const unwrapped = await Promise.all(keys.map((k) => keyring.unwrap("tenant-a", k)));
    expect(new Set(unwrapped.map((k) => k.toString("hex"))).size).toBe(keys.length);
    for (const k of unwrapped) expect(k).toHaveLength(32);

    const [data, fingerprint] = keys;
    await expect(keyring.unwrap("tenant-b", data!)).rejects.toThrow(DecryptionError);
    await expect(keyring.unwrap("tenant-a", { ...data!, purpose: "index" })).rejects.toThrow(DecryptionError);
    await expect(keyring.unwrap("tenant-a", { ...data!, version: 2 })).rejects.toThrow(DecryptionError);
    await expect(keyring.unwrap("tenant-a", { ...fingerprint!, wrapped: data!.wrapped })).rejects.toThrow(
      DecryptionError,
    );
    await expect(createKeyring(randomBytes(32)).unwrap("tenant-a", data!)).rejects.toThrow(DecryptionError);
  });

  it("reads a key wrapped before the providers existed, byte for byte", async () => {
    // Wrapped by the synchronous keyring of commit 800c532 (the last before keys/providers/), with this master key.
    const master = Buffer.from("7R0hKk2cJm3l2gEoXqKc4yCq4m1xV8b0dJb3o2n6T1Q=", "base64");
    const stored = {
      purpose: "data" as const,
      version: 1,
      wrapped: "AZbSd19yl9hiKBDWDFRlUXoFLyK+e2Fm/2haad/7o4gbCBxM/WwqFBCAF8aH4f8Dgc30Kd/zSQO6lgAXsw==",
    };
    const key = await createKeyring(master).unwrap("01930000-0000-7000-8000-000000000001", stored);
    expect(key.toString("hex")).toBe("9e51a31d5a82ea03f2568e0666877a7b03ea02fa7cbf0d5840d4545f9e9e9756");
    // And what it wraps now is in the same format: version byte, 12-byte IV, 16-byte tag, 32 bytes.
    const fresh = Buffer.from((await createKeyring(master).newKey("t", "data", 1)).wrapped, "base64");
    expect(fresh).toHaveLength(1 + 12 + 16 + 32);
    expect(fresh[0]).toBe(1);
  });

  it("rejects a master key of the wrong size", () => {
    expect(() => createKeyring(randomBytes(16))).toThrow(/32 bytes/);
  });
});

describe("API keys", () => {
  it("carry a typed prefix and 32 random bytes, and are stored only as SHA-256", () => {
    const key = generateApiKey("private");
    expect(key).toMatch(/^key_prv_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice("key_prv_".length), "base64url")).toHaveLength(32);
    expect(generateApiKey("public")).toMatch(/^key_pub_/);
    expect(generateApiKey("management")).toMatch(/^key_mgt_/);
    expect(generateApiKey("private")).not.toBe(key);
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).toBe(hashApiKey(key));
    expect(hashApiKey(key)).not.toContain(key.slice(8, 20));
  });
});
