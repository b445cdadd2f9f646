import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");
const DOCS = [
  "README.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** `TESSERA_*` names the docs mention that are not the server's settings, each with where it belongs. */
const NOT_SERVER_SETTINGS: Readonly<Record<string, string>> = {
  TESSERA_URL: "the CLI's server address (packages/cli/src/connection.ts)",
  TESSERA_DEBUG: "the CLI's stack traces (packages/cli/src/main.ts)",
  TESSERA_TEST_DATABASE_URL: "the test suite's PostgreSQL (packages/server/test/postgres-setup.ts)",
  TESSERA_WEBHOOK_SECRET: "a receiver's own variable in the webhook examples, not read by Tessera",
};

/** Every `TESSERA_*` variable loadConfig reads, found by handing it an environment that records each read. */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  const env = new Proxy<Record<string, string | undefined>>(
    {},
    {
      get(_target, name) {
        if (typeof name === "string" && name.startsWith("TESSERA_")) names.add(name);
        return undefined;
      },
    },
  );
  loadConfig(env);
  return names;
}

function variablesNamed(text: string): Set<string> {
  // A name ends at the first character that cannot be part of one; a trailing `_` is a prefix, not a name.
  return new Set([...text.matchAll(/\bTESSERA_[A-Z0-9_]*[A-Z0-9]\b/g)].map((match) => match[0]));
}

describe("the settings in the docs and in the code", () => {
  const inCode = variablesRead();

  it("finds the settings the code reads", () => {
    // A check that the recording environment works at all: a few settings every version has.
    for (const name of [
      "TESSERA_PORT",
      "TESSERA_DATABASE_URL",
      "TESSERA_MASTER_KEY",
      "TESSERA_RATE_LIMIT_KEY_BURST",
    ]) {
      expect(inCode).toContain(name);
    }
  });

  it.each(["README.md", ".env.example"])("%s lists every setting the server reads", (file) => {
    const named = variablesNamed(read(file));
    expect([...inCode].filter((name) => !named.has(name))).toEqual([]);
  });

  it("names no setting the server does not read, in the README, docs/*.md or .env.example", () => {
    const unknown = [...DOCS, ".env.example"].flatMap((file) =>
      [...variablesNamed(read(file))]
        .filter((name) => !inCode.has(name) && !(name in NOT_SERVER_SETTINGS))
        .map((name) => `${file}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it("shows the default in every commented-out line of .env.example, except the examples it says are examples", () => {
    // Where a setting has no default worth showing, the line is an example of a value; the file says so.
    const examples = new Set([
      "TESSERA_DATABASE_URL",
      "TESSERA_MASTER_KEY_FILE",
      "TESSERA_MASTER_KEY_PREVIOUS_FILE",
      "TESSERA_REACTOR_DIR",
      "TESSERA_REACTOR_EGRESS",
      // A provider's settings are refused while another provider is chosen, so each line is an example.
      "TESSERA_PKCS11_MODULE",
      "TESSERA_PKCS11_TOKEN_LABEL",
      "TESSERA_PKCS11_SLOT",
      "TESSERA_PKCS11_PIN_FILE",
      "TESSERA_PKCS11_KEY_LABEL",
      "TESSERA_PKCS11_GCM_IV",
      "TESSERA_KMS_KEY_ID",
      "TESSERA_KMS_WRAP_COMMAND",
      "TESSERA_KMS_UNWRAP_COMMAND",
      "TESSERA_KMS_ENCODING",
      "TESSERA_KMS_TIMEOUT_MS",
      "TESSERA_KMS_ENV",
    ]);
    const base = { TESSERA_MASTER_KEY: Buffer.alloc(32, 1).toString("base64") };
    const defaults = loadConfig(base);
    const shown = [...read(".env.example").matchAll(/^# (TESSERA_[A-Z0-9_]+)=(.*)$/gm)];
    expect(shown.length).toBeGreaterThan(20);
    const wrong = shown
      .filter(([, name]) => !examples.has(name!))
      .filter(
        ([, name, value]) =>
          JSON.stringify(loadConfig({ ...base, [name!]: value })) !== JSON.stringify(defaults),
      )
      .map(([line]) => line);
    expect(wrong).toEqual([]);
  });

  it("states in .env.example's prose the defaults its commented-out lines show", () => {
    // A paragraph of comments ends with the settings it describes, e.g. "... Defaults: 1000 and 2000." above
    // "# TESSERA_RATE_LIMIT_KEY_PER_SECOND=1000" and "# TESSERA_RATE_LIMIT_KEY_BURST=2000": the numbers of the
    // "Default" sentence, in order, are the values of those lines (which the test above ties to the code).
    const checked: string[] = [];
    const wrong: string[] = [];
    for (const paragraph of read(".env.example").split(/\n\s*\n/)) {
      const lines = paragraph.split("\n");
      const settings = lines.flatMap(
        (line) => /^# (TESSERA_[A-Z0-9_]+)=(\d+)$/.exec(line)?.slice(1, 3) ?? [],
      );
      const stated = /Defaults?: ([^]*?)\.(?:\s|$)/.exec(
        lines.filter((line) => !/^#? ?TESSERA_/.test(line)).join(" "),
      );
      if (settings.length === 0 || stated === null) continue;
      const names = settings.filter((_, i) => i % 2 === 0);
      const values = settings.filter((_, i) => i % 2 === 1);
      const numbers = (stated[1]!.match(/\d+/g) ?? []).slice(0, values.length);
      checked.push(...names);
      if (numbers.join(",") !== values.join(","))
        wrong.push(`${names.join(", ")}: "${stated[0].trim()}" but ${values.join(", ")}`);
    }
    expect(checked.length).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
  });
});
