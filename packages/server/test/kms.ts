import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { CommandSettings } from "../src/keys/providers/settings.js";

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), "fake-kms.ts");

export type KmsMode = "ok" | "fail" | "hang" | "garbage" | "short";

export interface FakeKms {
  readonly dir: string;
  /** The command provider's settings for this KMS. */
  readonly settings: CommandSettings;
  /** The same as TESSERA_ variables, for a server or the CLI. */
  readonly env: Record<string, string>;
  setMode(mode: KmsMode): void;
  /** The operations run so far, in order. */
  calls(): string[];
  /** For each run, the names of the variables it was given. */
  environments(): string[][];
  /** Every process the fake KMS started (itself, and in `hang` mode its child). */
  pids(): number[];
  remove(): void;
}

/** A KMS of its own (test/fake-kms.ts) in a temporary directory, with its own key. */
export function createFakeKms(
  options: { encoding?: "base64" | "binary"; timeoutMs?: number; env?: readonly string[] } = {},
): FakeKms {
  const dir = mkdtempSync(path.join(tmpdir(), "tessera-kms-"));
  const keyFile = path.join(dir, "kms.key");
  writeFileSync(keyFile, randomBytes(32).toString("hex"), { mode: 0o600 });
  const encoding = options.encoding ?? "base64";
  const argv = (operation: string) => [process.execPath, SCRIPT, operation, keyFile, dir, encoding];
  const settings: CommandSettings = {
    keyId: "fake-kms/tessera",
    wrap: argv("encrypt"),
    unwrap: argv("decrypt"),
    encoding,
    timeoutMs: options.timeoutMs ?? 10_000,
    env: options.env ?? [],
  };
  const lines = (file: string) =>
    existsSync(path.join(dir, file))
      ? readFileSync(path.join(dir, file), "utf8")
          .split("\n")
          .filter((line) => line !== "")
      : [];
  return {
    dir,
    settings,
    env: {
      TESSERA_MASTER_KEY_PROVIDER: "command",
      TESSERA_KMS_KEY_ID: settings.keyId,
      TESSERA_KMS_WRAP_COMMAND: JSON.stringify(settings.wrap),
      TESSERA_KMS_UNWRAP_COMMAND: JSON.stringify(settings.unwrap),
      TESSERA_KMS_ENCODING: encoding,
      TESSERA_KMS_TIMEOUT_MS: String(settings.timeoutMs),
      TESSERA_KMS_ENV: settings.env.join(","),
    },
    setMode: (mode) => writeFileSync(path.join(dir, "mode"), mode),
    calls: () => lines("calls"),
    environments: () => lines("env").map((line) => (line === "[]" ? [] : line.slice(1, -1).split(","))),
    pids: () => lines("pids").map(Number),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
