import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "../../shared/config-error.js";
import { decodeMasterKey, type MasterKeySource } from "./settings.js";

/** The configured key, or the path of the development key file that does not exist yet. */
export type ConfiguredMasterKey = { readonly key: Buffer } | { readonly missingDevFile: string };

/**
 * The master key as configured: the given value, the given file (which must exist), or the development key file
 * if there is one. Nothing is written here: whether a development key may be generated depends on the store
 * (main.ts calls createDevMasterKey only for a store that holds no keys).
 */
export function readMasterKey(source: MasterKeySource): ConfiguredMasterKey {
  switch (source.kind) {
    case "value":
      return { key: source.key };
    case "file":
      return { key: existingKey(source.path) };
    case "dev-file": {
      const key = readKeyFile(source.path);
      return key === undefined ? { missingDevFile: source.path } : { key };
    }
  }
}

export interface DevMasterKey {
  readonly key: Buffer;
  /** False when another process starting at the same moment created the file first. */
  readonly generated: boolean;
}

/**
 * Creates the development key file `<data dir>/master.key` (0600, in a 0700 directory). `flag: "wx"` makes
 * creation exclusive, so two processes starting at once cannot write different keys: the second reads the first's.
 */
export function createDevMasterKey(file: string): DevMasterKey {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, randomBytes(32).toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return { key: existingKey(file), generated: false };
  }
  return { key: existingKey(file), generated: true };
}

function existingKey(file: string): Buffer {
  const key = readKeyFile(file);
  if (key === undefined) throw new ConfigError([`the master key file ${file} does not exist`]);
  return key;
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
