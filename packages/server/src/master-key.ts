import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, decodeMasterKey, type MasterKeySource } from "./config.js";

export interface MasterKeyResult {
  readonly key: Buffer;
  /** Set when this start generated a development key file. */
  readonly generatedAt?: string;
}

/**
 * Reads the master key, or in development creates `<data dir>/master.key` (0600) on first start.
 * `flag: "wx"` makes creation exclusive, so two processes starting at once cannot write different keys.
 */
export function resolveMasterKey(source: MasterKeySource): MasterKeyResult {
  switch (source.kind) {
    case "value":
      return { key: source.key };
    case "file": {
      const key = readKeyFile(source.path);
      if (key === undefined) throw new ConfigError([`the master key file ${source.path} does not exist`]);
      return { key };
    }
    case "dev-file": {
      const existing = readKeyFile(source.path);
      if (existing !== undefined) return { key: existing };
      mkdirSync(path.dirname(source.path), { recursive: true, mode: 0o700 });
      try {
        writeFileSync(source.path, randomBytes(32).toString("base64") + "\n", { mode: 0o600, flag: "wx" });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        return resolveMasterKey({ kind: "file", path: source.path });
      }
      return { ...resolveMasterKey({ kind: "file", path: source.path }), generatedAt: source.path };
    }
  }
}

function readKeyFile(file: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new ConfigError([`cannot read the master key file ${file}: ${(error as Error).message}`]);
  }
  const key = decodeMasterKey(text);
  if (key === undefined) throw new ConfigError([`the master key file ${file} must hold 32 bytes in base64`]);
  return key;
}
