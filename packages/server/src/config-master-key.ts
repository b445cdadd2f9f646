import { readFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { nonEmpty, parseInteger, type Env } from "./config-values.js";
import { PROVIDER_NAMES, type ProviderName } from "./keys/providers/provider.js";
import {
  decodeMasterKey,
  type CommandSettings,
  type MasterKeyConfig,
  type MasterKeySource,
  type Pkcs11Settings,
} from "./keys/providers/settings.js";
import { ConfigError } from "./shared/config-error.js";
import type { DatabaseConfig } from "./storage/settings.js";

// The master key's settings for each provider (docs/keys.md), from the environment or from a key file.

const PKCS11_VARIABLES = [
  "TESSERA_PKCS11_MODULE",
  "TESSERA_PKCS11_TOKEN_LABEL",
  "TESSERA_PKCS11_SLOT",
  "TESSERA_PKCS11_PIN_FILE",
  "TESSERA_PKCS11_KEY_LABEL",
  "TESSERA_PKCS11_GCM_IV",
] as const;
const COMMAND_VARIABLES = [
  "TESSERA_KMS_KEY_ID",
  "TESSERA_KMS_WRAP_COMMAND",
  "TESSERA_KMS_UNWRAP_COMMAND",
  "TESSERA_KMS_ENCODING",
  "TESSERA_KMS_TIMEOUT_MS",
  "TESSERA_KMS_ENV",
] as const;

/** The variables a master key file may hold: a provider and its settings, nothing else. */
const MASTER_KEY_VARIABLES = new Set([
  "TESSERA_MASTER_KEY_PROVIDER",
  "TESSERA_MASTER_KEY",
  "TESSERA_MASTER_KEY_FILE",
  ...PKCS11_VARIABLES,
  ...COMMAND_VARIABLES,
]);

/**
 * A master key's configuration in a file of `NAME=value` lines (the .env format, parsed by Node's util.parseEnv):
 * the previous key during a rotation (TESSERA_MASTER_KEY_PREVIOUS_FILE) and the target of `tessera keys
 * rotate-master --to`. A raw key must be given (TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE): no development key
 * file is made for it. Relative paths are resolved against `cwd`.
 */
export function loadMasterKeyFile(file: string, cwd = process.cwd()): MasterKeyConfig {
  const problems: string[] = [];
  const parsed = parseMasterKeyFile(path.resolve(cwd, file), file, cwd, problems);
  if (parsed === undefined || problems.length > 0) throw new ConfigError(problems);
  return parsed;
}

export function parseMasterKeyFile(
  file: string,
  name: string,
  cwd: string,
  problems: string[],
): MasterKeyConfig | undefined {
  let env: Env;
  try {
    env = parseEnv(readFileSync(file, "utf8"));
  } catch (error) {
    problems.push(`${name}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
    return undefined;
  }
  const own: string[] = [];
  const unknown = Object.keys(env).filter((variable) => !MASTER_KEY_VARIABLES.has(variable));
  if (unknown.length > 0) {
    own.push(`may hold only a master key provider and its settings, not ${unknown.join(", ")}`);
  }
  const provider = nonEmpty(env.TESSERA_MASTER_KEY_PROVIDER)?.trim().toLowerCase() ?? "raw";
  if (
    provider === "raw" &&
    nonEmpty(env.TESSERA_MASTER_KEY) === undefined &&
    nonEmpty(env.TESSERA_MASTER_KEY_FILE) === undefined
  ) {
    own.push("a raw master key needs TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE");
    problems.push(...own.map((problem) => `${name} (${file}): ${problem}`));
    return undefined;
  }
  const parsed = parseMasterKey(env, true, undefined, cwd, cwd, own);
  problems.push(...own.map((problem) => `${name} (${file}): ${problem}`));
  return own.length > 0 ? undefined : parsed;
}

/**
 * TESSERA_MASTER_KEY_PROVIDER and its provider's settings. Every variable is read whatever the provider, so that a
 * setting meant for another provider is reported instead of silently ignored.
 */
export function parseMasterKey(
  env: Env,
  production: boolean,
  database: DatabaseConfig | undefined,
  dataDir: string,
  cwd: string,
  problems: string[],
): MasterKeyConfig | undefined {
  const name = (nonEmpty(env.TESSERA_MASTER_KEY_PROVIDER)?.trim().toLowerCase() ?? "raw") as ProviderName;
  if (!PROVIDER_NAMES.includes(name)) {
    problems.push(`TESSERA_MASTER_KEY_PROVIDER must be one of ${PROVIDER_NAMES.join(", ")}`);
    return undefined;
  }
  const foreign = (variables: readonly string[], provider: ProviderName) => {
    if (name === provider) return;
    for (const variable of variables) {
      if (nonEmpty(env[variable]) !== undefined) {
        problems.push(`${variable} is set, but TESSERA_MASTER_KEY_PROVIDER is ${name}, not ${provider}`);
      }
    }
  };
  foreign(["TESSERA_MASTER_KEY", "TESSERA_MASTER_KEY_FILE"], "raw");
  foreign(PKCS11_VARIABLES, "pkcs11");
  foreign(COMMAND_VARIABLES, "command");
  const pkcs11 = parsePkcs11(env, cwd, name === "pkcs11" ? problems : []);
  const command = parseCommand(env, name === "command" ? problems : []);
  switch (name) {
    case "raw": {
      const source = parseRawMasterKey(env, production, database, dataDir, cwd, problems);
      return source && { provider: "raw", source };
    }
    case "pkcs11":
      return pkcs11 && { provider: "pkcs11", pkcs11 };
    case "command":
      return command && { provider: "command", command };
  }
}

function parsePkcs11(env: Env, cwd: string, problems: string[]): Pkcs11Settings | undefined {
  const module = nonEmpty(env.TESSERA_PKCS11_MODULE);
  const label = nonEmpty(env.TESSERA_PKCS11_TOKEN_LABEL);
  const slotText = nonEmpty(env.TESSERA_PKCS11_SLOT)?.trim();
  const pinFile = nonEmpty(env.TESSERA_PKCS11_PIN_FILE);
  const keyLabel = nonEmpty(env.TESSERA_PKCS11_KEY_LABEL);
  const before = problems.length;
  if (module === undefined)
    problems.push("TESSERA_PKCS11_MODULE: the path of the PKCS#11 library is required");
  if ((label === undefined) === (slotText === undefined)) {
    problems.push("set one of TESSERA_PKCS11_TOKEN_LABEL and TESSERA_PKCS11_SLOT to choose the token");
  }
  const slot = slotText === undefined ? undefined : parseSlot(slotText);
  if (slotText !== undefined && slot === undefined) {
    problems.push("TESSERA_PKCS11_SLOT must be a slot id: decimal, or hexadecimal with 0x");
  }
  if (pinFile === undefined) {
    problems.push(
      "TESSERA_PKCS11_PIN_FILE: a file holding the token's user PIN is required (never the PIN itself)",
    );
  }
  if (keyLabel === undefined) problems.push("TESSERA_PKCS11_KEY_LABEL: the label of the AES key is required");
  const gcmIv = (nonEmpty(env.TESSERA_PKCS11_GCM_IV)?.trim().toLowerCase() ?? "random") as "random" | "token";
  if (gcmIv !== "random" && gcmIv !== "token") problems.push("TESSERA_PKCS11_GCM_IV must be random or token");
  if (problems.length > before || module === undefined || pinFile === undefined || keyLabel === undefined) {
    return undefined;
  }
  return Object.freeze({
    module: path.resolve(cwd, module),
    token: Object.freeze(slot === undefined ? { label: label! } : { slot }),
    pinFile: path.resolve(cwd, pinFile),
    keyLabel,
    gcmIv,
  });
}

function parseSlot(text: string): bigint | undefined {
  if (!/^(?:\d{1,20}|0x[0-9a-fA-F]{1,16})$/.test(text)) return undefined;
  const slot = BigInt(text);
  return slot < 2n ** 64n ? slot : undefined;
}

function parseCommand(env: Env, problems: string[]): CommandSettings | undefined {
  const before = problems.length;
  const keyId = nonEmpty(env.TESSERA_KMS_KEY_ID)?.trim();
  if (keyId === undefined) {
    problems.push("TESSERA_KMS_KEY_ID: the KMS key's name (an ARN, a resource name) is required");
  } else if (!/^[\x21-\x7e]{1,512}$/.test(keyId)) {
    problems.push("TESSERA_KMS_KEY_ID must be 1 to 512 printable ASCII characters without spaces");
  }
  const wrap = parseArgv(env.TESSERA_KMS_WRAP_COMMAND, "TESSERA_KMS_WRAP_COMMAND", problems);
  const unwrap = parseArgv(env.TESSERA_KMS_UNWRAP_COMMAND, "TESSERA_KMS_UNWRAP_COMMAND", problems);
  const encoding = (nonEmpty(env.TESSERA_KMS_ENCODING)?.trim().toLowerCase() ?? "base64") as
    "base64" | "binary";
  if (encoding !== "base64" && encoding !== "binary") {
    problems.push("TESSERA_KMS_ENCODING must be base64 or binary");
  }
  const timeoutMs = parseInteger(
    env.TESSERA_KMS_TIMEOUT_MS,
    10_000,
    100,
    120_000,
    "TESSERA_KMS_TIMEOUT_MS",
    problems,
  );
  const names = (nonEmpty(env.TESSERA_KMS_ENV) ?? "")
    .split(",")
    .map((each) => each.trim())
    .filter((each) => each !== "");
  const invalid = names.filter((each) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(each));
  if (invalid.length > 0) {
    problems.push(`TESSERA_KMS_ENV must list variable names, comma-separated (not: ${invalid.join(", ")})`);
  }
  if (problems.length > before || keyId === undefined || wrap === undefined || unwrap === undefined) {
    return undefined;
  }
  return Object.freeze({
    keyId,
    wrap,
    unwrap,
    encoding,
    timeoutMs,
    env: Object.freeze([...new Set(names)]),
  });
}

/**
 * A command as a JSON array of strings: the program by absolute path (the commands run with only the listed
 * variables, so no PATH to search, and nothing on it to plant), then its arguments, passed as they are.
 */
function parseArgv(raw: string | undefined, name: string, problems: string[]): readonly string[] | undefined {
  const text = nonEmpty(raw);
  if (text === undefined) {
    problems.push(`${name} is required: a JSON array, the program's absolute path first`);
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length === 0 ||
    parsed.length > 64 ||
    !parsed.every((each) => typeof each === "string" && !each.includes("\0"))
  ) {
    problems.push(
      `${name} must be a JSON array of 1 to 64 strings, like ["/usr/local/bin/aws", "kms", "encrypt", ...]`,
    );
    return undefined;
  }
  const argv = parsed as string[];
  if (!path.isAbsolute(argv[0]!)) {
    problems.push(`${name}: the program must be an absolute path (${JSON.stringify(argv[0])} is not)`);
    return undefined;
  }
  return Object.freeze(argv);
}

function parseRawMasterKey(
  env: Env,
  production: boolean,
  database: DatabaseConfig | undefined,
  dataDir: string,
  cwd: string,
  problems: string[],
): MasterKeySource | undefined {
  const value = nonEmpty(env.TESSERA_MASTER_KEY);
  const file = nonEmpty(env.TESSERA_MASTER_KEY_FILE);
  if (value !== undefined && file !== undefined) {
    problems.push("set only one of TESSERA_MASTER_KEY and TESSERA_MASTER_KEY_FILE");
    return undefined;
  }
  if (value !== undefined) {
    const key = decodeMasterKey(value);
    if (key === undefined) problems.push("TESSERA_MASTER_KEY must be 32 bytes encoded in base64");
    return key && { kind: "value", key };
  }
  if (file !== undefined) return { kind: "file", path: path.resolve(cwd, file) };
  if (production) {
    problems.push("NODE_ENV=production requires TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE");
    return undefined;
  }
  // A generated key lives on one machine; instances sharing a PostgreSQL store would each invent their own
  // and could not read each other's data, so the dev shortcut is only for the embedded store.
  if (database?.kind === "postgres") {
    problems.push("a PostgreSQL store requires TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE");
    return undefined;
  }
  return { kind: "dev-file", path: path.join(dataDir, "master.key") };
}
