import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isAlive, waitUntil } from "../../../../cli/test/processes.js";
import { createFakeKms, type FakeKms } from "../../../test/kms.js";
import { DecryptionError } from "../../crypto/cipher.js";
import { commandProvider, scrubbedFirstLine } from "./command.js";
import { MasterKeyProviderError } from "./provider.js";

describe("the command provider, against a KMS's stand-in", () => {
  let kms: FakeKms | undefined;
  const started = (options?: Parameters<typeof createFakeKms>[0]) => {
    kms = createFakeKms(options);
    return kms;
  };

  afterEach(() => {
    for (const pid of kms?.pids() ?? []) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone: the provider killed it, or it finished.
      }
    }
    kms?.remove();
    kms = undefined;
  });

  it.each(["base64", "binary"] as const)(
    "wraps and unwraps through the commands (%s), bound to the context",
    async (encoding) => {
      const fake = started({ encoding });
      const provider = commandProvider(fake.settings);
      expect(provider.keyVersion).toBe("command:fake-kms/tessera");
      const key = randomBytes(32);
      const wrapped = await provider.wrap(key, "tenant-a:data:1");
      expect(wrapped[0]).toBe(0x43);
      expect(wrapped.includes(key)).toBe(false);
      if (encoding === "base64") expect(wrapped.subarray(1).toString("latin1")).toMatch(/^[A-Za-z0-9+/=]+$/);
      expect((await provider.unwrap(wrapped, "tenant-a:data:1")).equals(key)).toBe(true);
      // The KMS opens it, but it was wrapped for another row: the digest of the context inside does not match.
      await expect(provider.unwrap(wrapped, "tenant-b:data:1")).rejects.toThrow(DecryptionError);
      expect(fake.calls()).toEqual(["encrypt", "decrypt", "decrypt"]);
    },
  );

  it("gives the commands only the variables it lists, and no shell", async () => {
    const fake = started({ env: ["KMS_REGION", "UNSET_VARIABLE"] });
    const provider = commandProvider(fake.settings, {
      KMS_REGION: "eu-west-1",
      AWS_SECRET_ACCESS_KEY: "not for the KMS command",
      TESSERA_MASTER_KEY: "nor this",
      PATH: "/usr/bin",
    });
    await provider.unwrap(await provider.wrap(randomBytes(32), "c"), "c");
    expect(fake.environments()).toEqual([["KMS_REGION"], ["KMS_REGION"]]);

    // An argument that a shell would expand is passed as it is: nothing runs it.
    const marker = path.join(fake.dir, "a-shell-ran");
    const literal = commandProvider({
      ...fake.settings,
      wrap: [process.execPath, "-e", "process.exit(0)", `$(touch ${marker})`, `; touch ${marker}`],
    });
    await expect(literal.wrap(randomBytes(32), "c")).rejects.toMatchObject({
      failure: "key",
      message: expect.stringContaining("the wrap command printed nothing"),
    });
    expect(existsSync(marker)).toBe(false);
  });

  it("kills a command that overruns its timeout, with everything it started", async () => {
    // Long enough for the stand-in to start its child on a loaded machine before the timeout kills it.
    const fake = started({ timeoutMs: 5000 });
    const provider = commandProvider(fake.settings);
    const wrapped = await provider.wrap(randomBytes(32), "c");
    fake.setMode("hang");
    const before = Date.now();
    const unwrapping = provider.unwrap(wrapped, "c").catch((caught: unknown) => caught);
    await waitUntil(
      () => fake.pids().length >= 3,
      5000,
      () => "the stand-in to start its child",
    );
    expect(await unwrapping).toMatchObject({
      name: "MasterKeyProviderError",
      failure: "unavailable",
      message: `the unwrap command (${process.execPath}) did not finish within 5000 ms`,
    });
    expect(Date.now() - before).toBeLessThan(30_000);
    // The stand-in and the child it started (in its process group) are both gone.
    const [, command, child] = fake.pids();
    await waitUntil(
      () => !isAlive(command!) && !isAlive(child!),
      10_000,
      () => `processes ${command} and ${child} to end`,
    );
  });

  it("reports a failing command by its exit code and a scrubbed first line of stderr, never the rest", async () => {
    const fake = started();
    const provider = commandProvider(fake.settings);
    const wrapped = await provider.wrap(randomBytes(32), "c");
    fake.setMode("fail");
    const error = (await provider.unwrap(wrapped, "c").catch((caught: unknown) => caught)) as Error;
    // Not a MasterKeyProviderError: a KMS that refuses may be refusing this key only (custody.ts asks its probe).
    expect(error).not.toBeInstanceOf(MasterKeyProviderError);
    expect(error.message).toMatch(
      /^the unwrap command \(.+\) exited with code 7: An error occurred \(AccessDeniedException\) when calling the decrypt operation: key \[redacted\] plaintext \[redacted\]$/,
    );
    expect(error.message).not.toContain("Traceback");
  });

  it("refuses what is not an answer: nothing, garbage, too few bytes", async () => {
    const fake = started();
    const provider = commandProvider(fake.settings);
    const wrapped = await provider.wrap(randomBytes(32), "c");
    fake.setMode("garbage");
    await expect(provider.wrap(randomBytes(32), "c")).rejects.toMatchObject({
      failure: "key",
      message: "the wrap command printed nothing: check TESSERA_KMS_WRAP_COMMAND and TESSERA_KMS_ENCODING",
    });
    await expect(provider.unwrap(wrapped, "c")).rejects.toThrow(
      "the unwrap command printed something that is not base64",
    );
    fake.setMode("short");
    await expect(provider.unwrap(wrapped, "c")).rejects.toThrow(
      "the unwrap command printed 10 bytes, not 64",
    );
    // A wrapped key of another provider is not given to the command at all.
    const calls = fake.calls().length;
    await expect(provider.unwrap(Buffer.concat([Buffer.of(1), wrapped]), "c")).rejects.toThrow(
      DecryptionError,
    );
    expect(fake.calls()).toHaveLength(calls);
  });

  it("says a command that cannot be started is a missing program", async () => {
    const fake = started();
    const provider = commandProvider({ ...fake.settings, wrap: [path.join(fake.dir, "no-such-kms")] });
    await expect(provider.wrap(randomBytes(32), "c")).rejects.toMatchObject({
      failure: "module",
      message: `the wrap command (${path.join(fake.dir, "no-such-kms")}) cannot be started (ENOENT)`,
    });
  });

  it("runs at most four commands at once", async () => {
    const fake = started();
    const provider = commandProvider(fake.settings);
    const keys = Array.from({ length: 10 }, () => randomBytes(32));
    const wrapped = await Promise.all(keys.map((key, i) => provider.wrap(key, `t:${i}`)));
    const back = await Promise.all(wrapped.map((each, i) => provider.unwrap(each, `t:${i}`)));
    back.forEach((key, i) => expect(key.equals(keys[i]!)).toBe(true));
  });
});

describe("scrubbedFirstLine", () => {
  it.each([
    [
      "An error occurred (AccessDeniedException) when calling the Decrypt operation\nmore",
      "An error occurred (AccessDeniedException) when calling the Decrypt operation",
    ],
    [
      "\n\n  ERROR: (gcloud.kms.decrypt) PERMISSION_DENIED  \n",
      "ERROR: (gcloud.kms.decrypt) PERMISSION_DENIED",
    ],
    [`key ${"ab12".repeat(16)} and hdr`, "key [redacted] and hdr"],
    ["token s.Abc123XyZ9876543 used", "token s.[redacted] used"],
    [`any run of 32: ${"Q".repeat(32)}`, "any run of 32: [redacted]"],
    ["bell \u0007 and \u001b[31m colour", "bell ? and ?[31m colour"],
    ["", ""],
  ])("%j → %j", (stderr, shown) => {
    expect(scrubbedFirstLine(Buffer.from(stderr))).toBe(shown);
  });

  it("cuts a long line at 160 characters", () => {
    expect(scrubbedFirstLine(Buffer.from("word ".repeat(100)))).toHaveLength(160);
  });
});
