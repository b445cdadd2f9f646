import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
} from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestServer,
} from "../../test/harness.js";
import { findPostgresBin } from "../../test/postgres-cluster.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../test/webhook-receiver.js";

/*
 * Proof of no plaintext: tokens are written with known secrets through every token endpoint, then the raw
 * store (SQLite file and WAL; a pg_dump and the database's relation files) and the captured trace-level log are
 * searched for each secret, in several forms. Nothing may be found. Metadata and token ids are not secret, and
 * finding them proves that the scanner looks where the data is.
 *
 * Needles, and why they are safe from false positives:
 * - the exact value, the value without separators, and its case-folded form (search indexes fold case);
 * - every window of 8 consecutive digits taken from the value's digit runs: catches a number stored partly or
 *   re-formatted (a BIN, "123 45 6789"). A given 8-digit string turns up by chance with probability 10^-8 per
 *   position of decimal text, (1/16)^8 ≈ 2·10^-10 of hex (UUIDs, key hashes), (1/64)^8 ≈ 4·10^-15 of base64
 *   (ciphertext, HMACs) and 256^-8 of binary. With ~150 windows over the few hundred kB of hex and decimal text
 *   here that is below 10^-4 per run. The log's timing fields (`time`, `responseTime`: up to 17 noise digits on
 *   every line) are the only decimal text long enough to matter, so the log is searched without those two numbers.
 *   Shorter runs cannot be checked: any 4 digits are in a few MB of base64 by chance, with certainty.
 * - hex and base64 encodings of the value (in each of the three base64 alignments), should plaintext be stored
 *   encoded rather than encrypted: at 12 characters or more, at most 16^-12 per position.
 * - a short secret (a CVC) only in JSON-ish forms such as `"cvc":"987"`: "987" alone is everywhere.
 * Every needle is searched as UTF-8 (= latin1 here: all needles are ASCII) and as UTF-16LE.
 *
 * The log is also searched for what no planted needle names: any run of 13 or more digits (a card number's
 * shortest length; single spaces or dashes between them allowed), once UUIDs and the timing fields are taken out,
 * and anything shaped like an API key.
 */

const MIN_DIGIT_RUN = 8;
const MIN_ENCODED_LENGTH = 12;

interface Needle {
  /** What was found: the secret's name and the form. Test values only; a haystack is never printed. */
  readonly label: string;
  readonly text: string;
}

interface Haystack {
  readonly bytes: Buffer;
  /** Describes where an offset lies (file and page, table, log line kind). */
  readonly where: (offset: number) => string;
}

class Secrets {
  readonly needles: Needle[] = [];
  private readonly seen = new Set<string>();

  private add(name: string, form: string, text: string): void {
    if (text.length === 0 || this.seen.has(text)) return;
    this.seen.add(text);
    this.needles.push({ label: `${name}: ${form} ${JSON.stringify(text)}`, text });
  }

  value(name: string, value: string): void {
    const bare = value.replace(/[\s\-_.:/]/g, "");
    for (const [form, text] of [
      ["as given", value],
      ["without separators", bare],
      ["case-folded", value.normalize("NFKC").toLowerCase()],
      ["upper-cased", value.toUpperCase()],
    ] as const) {
      this.add(name, form, text);
    }
    for (const run of bare.match(/[0-9]+/g) ?? []) {
      for (let i = 0; i + MIN_DIGIT_RUN <= run.length; i++) {
        this.add(name, "digit run", run.slice(i, i + MIN_DIGIT_RUN));
      }
    }
    for (const text of new Set([value, bare])) {
      const bytes = Buffer.from(text, "utf8");
      if (bytes.length * 2 >= MIN_ENCODED_LENGTH) {
        this.add(name, "hex", bytes.toString("hex"));
        this.add(name, "HEX", bytes.toString("hex").toUpperCase());
      }
      for (const core of base64Cores(bytes)) {
        this.add(name, "base64", core);
        this.add(name, "base64url", core.replace(/\+/g, "-").replace(/\//g, "_"));
      }
    }
  }

  /** A value too short to search alone (a CVC): only next to its field name. */
  field(name: string, field: string, value: string): void {
    for (const form of [
      `"${field}":"${value}"`,
      `"${field}": "${value}"`,
      `\\"${field}\\":\\"${value}\\"`,
      `${field}=${value}`,
    ]) {
      this.add(name, "as a JSON field", form);
    }
  }

  apiKey(name: string, key: string): void {
    this.value(name, key);
    // The random part alone, without its `key_prv_` (or other) prefix.
    const body = /^(?:key_[a-z]+_|test-bootstrap-)(.+)$/.exec(key)?.[1];
    if (body !== undefined) this.add(name, "without its prefix", body);
  }
}

/** The base64 characters that depend only on `bytes`, whatever comes before (3 alignments) or after them. */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let pad = 0; pad < 3; pad++) {
    const padded = Buffer.concat([Buffer.alloc(pad), bytes]);
    const complete = Math.floor(padded.length / 3) * 4;
    const core = padded
      .toString("base64")
      .slice(0, complete)
      .slice(pad === 0 ? 0 : 4);
    if (core.length >= MIN_ENCODED_LENGTH) cores.push(core);
  }
  return cores;
}

function scan(name: string, haystack: Haystack, needles: readonly Needle[]): string[] {
  const found: string[] = [];
  const { bytes } = haystack;
  for (const needle of needles) {
    for (const encoding of ["utf8", "utf16le"] as const) {
      const pattern = Buffer.from(needle.text, encoding);
      // Every distinct place (table, file, …), the first few occurrences only.
      const places = new Set<string>();
      for (let offset = bytes.indexOf(pattern); offset >= 0 && places.size < 5;) {
        places.add(haystack.where(offset));
        offset = bytes.indexOf(pattern, offset + 1);
      }
      for (const place of places) found.push(`${needle.label} (${encoding}) in ${name}, ${place}`);
    }
  }
  return found;
}

function contains(bytes: Buffer, text: string): boolean {
  return bytes.includes(Buffer.from(text, "utf8"));
}

// ---- the stores' raw bytes ----

function sqliteFiles(dir: string): { name: string; bytes: Buffer }[] {
  return readdirSync(dir)
    .filter((name) => name.startsWith("tessera.db"))
    .sort()
    .map((name) => ({ name, bytes: readFileSync(path.join(dir, name)) }));
}

function sqliteHaystack(file: { name: string; bytes: Buffer }): Haystack {
  return { bytes: file.bytes, where: (offset) => `byte ${offset} of ${file.name}` };
}

/** pg_dump of the cluster's own version: beside initdb (or where an initdb symlink points), else on PATH. */
function pgDumpCommand(): string {
  const bin = findPostgresBin();
  if (bin === undefined) return "pg_dump";
  const initdb = path.join(bin, "initdb");
  for (const dir of [bin, path.dirname(existsSync(initdb) ? realpathSync(initdb) : initdb)]) {
    if (existsSync(path.join(dir, "pg_dump"))) return path.join(dir, "pg_dump");
  }
  return "pg_dump";
}

function pgDump(databaseUrl: string): Buffer {
  // Schema and data of every table, plain SQL; COPY blocks name their table.
  return execFileSync(pgDumpCommand(), ["--no-owner", "--no-privileges", "--dbname", databaseUrl], {
    maxBuffer: 512 * 1024 * 1024,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function dumpHaystack(dump: Buffer): Haystack {
  return {
    bytes: dump,
    where: (offset) => {
      const copy = dump.lastIndexOf("\nCOPY ", offset);
      if (copy < 0) return "in the schema section";
      const header = dump.subarray(copy + 1, Math.min(dump.length, copy + 200)).toString("utf8");
      return `in the data of table ${header.split(" ", 2)[1]}`;
    },
  };
}

interface RelationFile {
  readonly relation: string;
  readonly file: string;
  readonly bytes: Buffer;
}

/**
 * The files of this database's own relations (tables, their indexes and TOAST), after a CHECKPOINT has written
 * every dirty buffer. Undefined when the cluster's files are out of reach (a remote or foreign-owned server).
 */
async function postgresRelationFiles(databaseUrl: string): Promise<RelationFile[] | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const settings = await client.query<{ dir: string; oid: string }>(
      "select current_setting('data_directory') as dir, " +
        "(select oid::text from pg_database where datname = current_database()) as oid",
    );
    const { dir, oid } = settings.rows[0]!;
    const base = path.join(dir, "base", oid);
    try {
      accessSync(base, constants.R_OK);
    } catch {
      return undefined;
    }
    await client.query("checkpoint");
    // Objects from oid 16384 on are user-made (FirstNormalObjectId): the catalogs hold no token data.
    const relations = await client.query<{ node: string; name: string }>(
      "select pg_relation_filenode(c.oid)::text as node, c.relname as name from pg_class c " +
        "where c.oid >= 16384 and pg_relation_filenode(c.oid) is not null",
    );
    const nameOf = new Map(relations.rows.map((r) => [r.node, r.name]));
    return readdirSync(base)
      .map((file) => ({ file, node: /^(\d+)/.exec(file)?.[1] ?? "" }))
      .filter(({ node }) => nameOf.has(node))
      .map(({ file, node }) => ({
        relation: nameOf.get(node)!,
        file,
        bytes: readFileSync(path.join(base, file)),
      }));
  } finally {
    await client.end();
  }
}

// ---- the log ----

function logHaystacks(lines: readonly string[]): { name: string; haystack: Haystack }[] {
  return lines.map((text, index) => {
    let kind = "unparsable line";
    try {
      const parsed = JSON.parse(text) as { msg?: unknown; level?: unknown };
      kind = `level ${String(parsed.level)} "${String(parsed.msg)}"`;
    } catch {
      // reported as unparsable
    }
    // The timings are numbers the server measured, never data, and their float noise holds long digit runs:
    // `"responseTime":12.4099999992` once matched a 10-digit account number given as is.
    const timed = Buffer.from(text.replace(/"(time|responseTime)":[-+.0-9eE]+/g, '"$1":0'), "utf8");
    return {
      name: `log line ${index + 1} (${kind})`,
      haystack: { bytes: timed, where: (offset) => `at character ${offset}` },
    };
  });
}

/** What looks like a card number or an API key in a log line, whether planted or not (see the top). */
function unplanted(line: string): string[] {
  const text = line
    .replace(/"(time|responseTime)":[-+.0-9eE]+/g, '"$1":0')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "<uuid>");
  const digits = (text.match(/[0-9](?:[ -]?[0-9]){12,}/g) ?? []).map((run) => `a run of digits: ${run}`);
  const keys = (text.match(/key_(?:prv|pub|mgt)_[A-Za-z0-9_-]{8,}/g) ?? []).map((key) => `a key: ${key}`);
  return [...digits, ...keys];
}

/** Sends bytes as they are over a socket of its own and answers the status line (or what came). */
function rawRequest(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (answer += chunk));
    socket.on("error", (error: NodeJS.ErrnoException) =>
      error.code === "ECONNRESET" || error.code === "EPIPE" ? resolve(answer) : reject(error),
    );
    socket.on("close", () => resolve(answer));
    // Not ended: a half-closed socket may be closed before the answer is written. `Connection: close` ends it.
    socket.write(request, "latin1");
  });
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(STORE_UNAVAILABLE)("no plaintext at rest or in the log", () => {
  const secrets = new Secrets();
  const logLines: string[] = [];
  /** Not secret: searchable metadata, which must be found where the tokens are. */
  const batch = `batch-${randomBytes(8).toString("hex")}`;
  const tokenIds: string[] = [];
  let server: TestServer;
  /** SQLite lives in a directory of this file's own, so that it outlives the server for the closed-file scan. */
  let sqliteDir: string | undefined;
  let closed: Promise<void> | undefined;
  const closeServer = () => (closed ??= server.close());

  let revealer: string;
  let collector: string;
  /** A trace id sent with every request of the error tests: finding it proves the log holds those requests. */
  const traceId = `no-plaintext-${randomBytes(8).toString("hex")}`;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    sqliteDir = STORE === "sqlite" ? mkdtempSync(path.join(tmpdir(), "tessera-no-plaintext-")) : undefined;
    receiver = await startWebhookReceiver();
    server = await startTestServer(
      {
        ...(sqliteDir !== undefined && {
          TESSERA_DATABASE_URL: `sqlite:${path.join(sqliteDir, "tessera.db")}`,
        }),
        TESSERA_WEBHOOK_ALLOW_PRIVATE: "true",
        TESSERA_JOB_POLL_MS: "50",
      },
      { logLevel: "trace", logSink: (line) => logLines.push(line) },
    );
    secrets.apiKey("bootstrap key", server.bootstrapKey);
  });
  afterAll(async () => {
    if (server !== undefined) await closeServer();
    await receiver?.close();
    if (sqliteDir !== undefined) rmSync(sqliteDir, { recursive: true, force: true });
  });

  async function application(body: unknown): Promise<{ id: string; key: string }> {
    const response = await server.request("POST", "/applications", { body });
    expect(response.status, response.text).toBe(201);
    secrets.apiKey(`key of Application ${response.body.name}`, response.body.key);
    return { id: response.body.id, key: response.body.key };
  }

  /** `tracked` tokens outlive the test's writes: their ids must be found in the store. */
  async function create(body: Record<string, unknown>, key = revealer, tracked = true): Promise<any> {
    const response = await server.request("POST", "/tokens", {
      key,
      body: { ...body, metadata: { batch, ...(body.metadata as object | undefined) } },
    });
    expect(response.status, response.text).toBe(201);
    if (tracked) tokenIds.push(response.body.id);
    return response.body;
  }

  async function patch(id: string, body: unknown): Promise<any> {
    const response = await server.request("PATCH", `/tokens/${id}`, {
      key: revealer,
      contentType: "application/merge-patch+json",
      body,
    });
    expect(response.status, response.text).toBe(200);
    return response.body;
  }

  async function read(id: string): Promise<unknown> {
    const response = await server.request("GET", `/tokens/${id}`, { key: revealer });
    expect(response.status, response.text).toBe(200);
    return response.body.data;
  }

  it("creates, changes, reads, searches and deletes tokens holding known secrets", async () => {
    revealer = (
      await application({
        name: "revealer",
        type: "private",
        rules: [
          {
            priority: 1,
            container: "/",
            transform: "reveal",
            permissions: ["token:create", "token:read", "token:update", "token:delete", "token:search"],
          },
        ],
      })
    ).key;
    collector = (
      await application({
        name: "collector",
        type: "public",
        rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:create"] }],
      })
    ).key;
    const rotated = await application({ name: "rotated", type: "private", permissions: ["token:read"] });
    const regenerated = await server.request("POST", `/applications/${rotated.id}/regenerate`);
    expect(regenerated.status, regenerated.text).toBe(200);
    secrets.apiKey("regenerated key of Application rotated", regenerated.body.key);
    const tenant = await server.request("POST", "/tenants", { body: { name: "Other tenant" } });
    expect(tenant.status, tenant.text).toBe(201);
    secrets.apiKey("management key of a new tenant", tenant.body.application.key);
    const unknownKey = `key_prv_${randomBytes(32).toString("base64url")}`;
    secrets.apiKey("an unknown key sent by a client", unknownKey);
    expectProblem(await server.request("GET", "/tokens", { key: unknownKey }), 401);

    // -- POST /tokens, every type --
    secrets.value("card number", "4111111111111111");
    const visa = await create({ type: "card_number", data: "4111111111111111", metadata: { kind: "visa" } });
    expect(visa.data).toBe("4111111111111111");

    secrets.value("card number (public key)", "378282246310005");
    const amex = await create({ type: "card_number", data: "378282246310005" }, collector);
    expect(amex.data).toBe("XXXXXXXXXXX0005");

    secrets.value("card object number", "5555555555554444");
    secrets.field("card object cvc", "cvc", "987");
    const card = await create({
      type: "card",
      data: { number: "5555555555554444", expiration_month: 12, expiration_year: 2030, cvc: "987" },
    });
    expect(card.data).toMatchObject({ number: "5555555555554444", cvc: "987" });

    secrets.value("SSN", "123-45-6789");
    const ssn = await create({
      type: "social_security_number",
      data: "123-45-6789",
      deduplicate_token: true,
    });
    const again = await create({
      type: "social_security_number",
      data: "123456789",
      deduplicate_token: true,
    });
    expect(again.id).toBe(ssn.id);

    secrets.value("EIN", "57-4823190");
    const ein = await create({ type: "employer_id_number", data: "57-4823190" });

    secrets.value("bank routing number", "021000021");
    secrets.value("bank account number", "000123456789");
    const bank = await create({
      type: "bank",
      data: { routing_number: "021000021", account_number: "000123456789" },
    });

    secrets.value("US bank routing number", "011000015");
    const routing = await create({ type: "us_bank_routing_number", data: "011000015" });

    secrets.value("passphrase", "Correct Horse Battery Staple");
    const phrase = await create({
      data: "Correct Horse Battery Staple",
      search_indexes: ["{{ data }}", "{{ data | downcase }}"],
    });

    secrets.value("PIN in an object", "80441395");
    secrets.value("phrase in an object", "Open Sesame Mellon Friend");
    const object = await create({
      data: { pin: "80441395", phrase: "Open Sesame Mellon Friend" },
      fingerprint_expression: "{{ data.pin }}",
      search_indexes: ["{{ data.pin }}", "{{ data.phrase | upcase }}"],
    });

    // -- POST /tokenize, nested --
    secrets.value("tokenized card number", "4000056655665556");
    secrets.value("tokenized SSN", "078051120");
    secrets.value("tokenized EIN", "84-2947163");
    secrets.value("tokenized US bank account number", "4099999992");
    secrets.value("tokenized card number in a list", "6011111111111117");
    secrets.value("tokenized plain value", "Quenby Marchbanks Maidenname");
    const tokenized = await server.request("POST", "/tokenize", {
      key: revealer,
      body: {
        customer: {
          card: {
            type: "card",
            data: { number: "4000056655665556", expiration_month: 1, expiration_year: 2031, cvc: "987" },
            metadata: { batch },
          },
          ssn: { type: "social_security_number", data: "078051120", metadata: { batch } },
          ein: { type: "employer_id_number", data: "84-2947163", metadata: { batch } },
        },
        accounts: [
          { type: "us_bank_account_number", data: "4099999992", metadata: { batch } },
          { type: "card_number", data: "6011111111111117", metadata: { batch } },
        ],
        note: "Quenby Marchbanks Maidenname",
      },
    });
    expect(tokenized.status, tokenized.text).toBe(200);
    const t = tokenized.body;
    expect(t.customer.card.data.number).toBe("4000056655665556");
    tokenIds.push(
      t.customer.card.id,
      t.customer.ssn.id,
      t.customer.ein.id,
      t.accounts[0].id,
      t.accounts[1].id,
    );
    tokenIds.push(t.note);

    // -- PATCH /tokens/{id}: the data changes to other known values --
    secrets.value("patched card number", "5105105105105100");
    expect((await patch(visa.id, { data: "5105105105105100" })).data).toBe("5105105105105100");
    secrets.value("patched card object number", "4012888888881881");
    secrets.field("patched card object cvc", "cvc", "654");
    expect((await patch(card.id, { data: { number: "4012888888881881", cvc: "654" } })).data).toEqual({
      number: "4012888888881881",
      expiration_month: 12,
      expiration_year: 2030,
      cvc: "654",
    });
    secrets.value("patched SSN", "219-09-9999");
    expect((await patch(ssn.id, { data: "219-09-9999", metadata: { step: "patched" } })).data).toBe(
      "219-09-9999",
    );
    secrets.value("patched bank account number", "000987654321");
    expect((await patch(bank.id, { data: { account_number: "000987654321" } })).data).toEqual({
      routing_number: "021000021",
      account_number: "000987654321",
    });
    secrets.value("patched passphrase", "Tr0ub4dor&3 Amber Zebra");
    expect((await patch(phrase.id, { data: "Tr0ub4dor&3 Amber Zebra" })).data).toBe(
      "Tr0ub4dor&3 Amber Zebra",
    );

    // -- failures whose digits are secret too: refused, never stored nor logged --
    secrets.value("invalid card number", "4111111111111112");
    expectProblem(
      await server.request("POST", "/tokens", {
        key: revealer,
        body: { type: "card_number", data: "4111111111111112" },
      }),
      400,
      { errors: { data: ["fails the Luhn check"] } },
    );
    expectProblem(
      await server.request("POST", "/tokenize", {
        key: revealer,
        body: { bad: { type: "card_number", data: "4111111111111112" } },
      }),
      400,
      { errors: { "bad.data": ["fails the Luhn check"] } },
    );
    expectProblem(
      await server.request("PATCH", `/tokens/${visa.id}`, {
        key: revealer,
        contentType: "application/merge-patch+json",
        body: { data: "4111111111111112" },
      }),
      400,
    );
    expectProblem(
      await server.request("POST", "/tokens", {
        key: revealer,
        rawBody: '{"type":"card_number","data":"4111111111111112"',
      }),
      400,
      { code: "malformed-request" },
    );
    expectProblem(
      await server.request("PATCH", `/tokens/${visa.id}`, {
        key: revealer,
        body: { data: "4111111111111112" },
      }),
      415,
    );
    expectProblem(
      await server.request("POST", "/tokens", {
        key: collector,
        body: { type: "social_security_number", data: "078051120" },
      }),
      403,
    );

    // -- reads, revealed --
    expect(await read(visa.id)).toBe("5105105105105100");
    expect(await read(amex.id)).toBe("378282246310005");
    expect(await read(ssn.id)).toBe("219-09-9999");
    expect(await read(ein.id)).toBe("57-4823190");
    expect(await read(routing.id)).toBe("011000015");
    expect(await read(object.id)).toEqual({ pin: "80441395", phrase: "Open Sesame Mellon Friend" });
    expect(await read(t.note)).toBe("Quenby Marchbanks Maidenname");
    const masked = await server.request("GET", `/tokens/${visa.id}`, { key: regenerated.body.key });
    expect(masked.body.data).toBe("XXXXXXXXXXXX5100");

    const detokenized = await server.request("POST", "/detokenize", {
      key: revealer,
      body: {
        card: `{{ ${card.id} }}`,
        text: `SSN {{ ${t.customer.ssn.id} }}, account {{ ${t.accounts[0].id} }}`,
        bank: `{{${bank.id}}}`,
      },
    });
    expect(detokenized.status, detokenized.text).toBe(200);
    expect(detokenized.body).toEqual({
      card: { number: "4012888888881881", expiration_month: 12, expiration_year: 2030, cvc: "654" },
      text: "SSN 078051120, account 4099999992",
      bank: { routing_number: "021000021", account_number: "000987654321" },
    });

    // -- searches by metadata (not secret), with revealed data in the page --
    const listed = await server.request("GET", `/tokens?metadata.batch=${batch}&size=100`, { key: revealer });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.pagination.total_items).toBe(new Set(tokenIds).size - 1); // the plain value has no batch
    const patched = await server.request("GET", `/tokens?metadata.batch=${batch}&metadata.step=PATCHED`, {
      key: revealer,
    });
    expect(patched.body.data.map((token: { data: unknown }) => token.data)).toEqual(["219-09-9999"]);
    const cards = await server.request("GET", `/tokens?metadata.batch=${batch}&type=card_number`, {
      key: revealer,
    });
    expect(cards.body.pagination.total_items).toBe(3);

    // -- searches by data: the searched values must leave no trace either --
    const found = await server.request("POST", "/tokens/search", {
      key: revealer,
      body: { query: 'data:"219-09-9999" OR data:219099999 OR data:9999', size: 100 },
    });
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.map((token: { data: unknown }) => token.data)).toContain("219-09-9999");
    const misspelt = await server.request("POST", "/tokens/search", {
      key: revealer,
      body: { query: "type:social_security_number AND data:219-09-9999*" },
    });
    expect(misspelt.status).toBe(400);

    // -- a deleted token, and one the sweeper deletes after it expires --
    secrets.value("deleted token's value", "Swordfish Zeta Ninetynine");
    const doomed = await create({ data: "Swordfish Zeta Ninetynine" }, revealer, false);
    expect((await server.request("DELETE", `/tokens/${doomed.id}`, { key: revealer })).status).toBe(204);
    secrets.value("expired token's value", "Rosebud Sled Kane Xanadu");
    await create(
      {
        data: "Rosebud Sled Kane Xanadu",
        expires_at: new Date(server.clock.now().getTime() + 60_000).toISOString(),
      },
      revealer,
      false,
    );
    server.clock.advance(61_000);
    await waitFor(
      () => logLines.some((line) => line.includes('"msg":"deleted expired tokens"')),
      "the sweeper to delete the expired token",
    );
  });

  it("keeps reactor errors, svc errors, validation failures and bad requests out of the log", async () => {
    const traced = { "SVC-TRACE-ID": traceId };
    // -- reactor errors: a reactor that throws, in every way reactor code can, the card it was given --
    secrets.value("card given to a reactor", "5200828282828210");
    secrets.value("invalid card a reactor creates", "5200828282828211");
    const given = await create({ type: "card_number", data: "5200828282828210" });
    const reactorApp = await application({
      name: "reactor's own",
      type: "private",
      rules: [
        {
          priority: 1,
          container: "/",
          transform: "reveal",
          permissions: ["token:create", "token:read", "token:search"],
        },
      ],
    });
    const user = await application({
      name: "reactor user",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:use"] }],
    });
    const reactor = await server.request("POST", "/reactors", {
      body: {
        name: "thrower",
        application: { id: reactorApp.id },
        configuration: {},
        code: `
          const sdk = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
          module.exports = async ({ args, svc }) => {
            const card = args.card;
            console.log("charging", card);
            console.error({ card });
            switch (args.mode) {
              case "error": throw new Error("declined " + card);
              case "string": throw "declined " + card;
              case "object": throw { card, message: "declined " + card };
              case "named": {
                const error = new Error(card);
                error.name = card;
                error.status = 500;
                error.errors = { card };
                throw error;
              }
              case "wrapped": throw new sdk.ReactorRuntimeError(new Error("declined " + card));
              case "custom":
                throw new sdk.CustomHttpResponseError({ status: 500, headers: { "X-Card": card }, body: { card } });
              case "svc-get": await svc.tokens.get(card); break;
              case "svc-create": await svc.tokens.create({ type: "card_number", data: card.slice(0, -1) + "1" }); break;
              case "svc-search": await svc.tokens.search({ query: card }); break;
              default: throw new sdk[args.mode]({ card: ["declined " + card], number: card });
            }
            return { raw: "not reached" };
          };`,
      },
    });
    expect(reactor.status, reactor.text).toBe(201);
    const react = (mode: string) =>
      server.request("POST", `/reactors/${reactor.body.id}/react`, {
        key: user.key,
        headers: traced,
        body: { args: { mode, card: `{{ ${given.id} }}` } },
      });
    const expected: [string, number][] = [
      ["error", 500],
      ["string", 500],
      ["object", 500],
      ["named", 500],
      ["wrapped", 500],
      ["custom", 500],
      ["svc-get", 500],
      ["svc-create", 500],
      ["svc-search", 500],
      ["AuthenticationError", 401],
      ["AuthorizationError", 403],
      ["BadRequestError", 400],
      ["InvalidPaymentMethodError", 402],
      ["InvalidReactorConfigurationError", 400],
      ["RateLimitError", 429],
      ["ReactorRuntimeError", 500],
      ["ServiceUnavailableError", 503],
    ];
    for (const [mode, status] of expected) {
      const answer = await react(mode);
      expect(answer.status, `${mode}: ${answer.text}`).toBe(status);
    }
    // The caller gets what the reactor chose to answer: the card, which proves it reached the error.
    expect((await react("error")).text).toContain("5200828282828210");

    // -- the same error, thrown by an asynchronous invocation: run, sealed and delivered in the background --
    const before = receiver.received.length;
    const queued = await server.request("POST", `/reactors/${reactor.body.id}/react`, {
      key: user.key,
      headers: traced,
      body: { args: { mode: "error", card: `{{ ${given.id} }}` }, callback_url: `${receiver.url}/hook` },
    });
    expect(queued.status, queued.text).toBe(202);
    const [hook] = (await receiver.waitFor(before + 1)).slice(before);
    expect(hook!.body.data.error.errors.error).toEqual(["declined 5200828282828210"]);

    // -- validation failures: a card number as the value of fields that refuse it --
    secrets.value("card in invalid fields", "5425233430109903");
    const invalid: [string, string, unknown][] = [
      ["POST", "/tokens", { type: "card_number", data: 5425233430109903 }],
      ["POST", "/tokens", { type: "5425233430109903", data: "x" }],
      ["POST", "/tokens", { data: "x", metadata: { card: 5425233430109903 } }],
      ["POST", "/tokens", { data: "x", expires_at: "5425233430109903" }],
      ["POST", "/tokens", { data: "x", containers: ["5425233430109903"] }],
      ["POST", "/tokens/search", { query: "5425233430109903" }],
      ["POST", "/tokens/search", { query: "type:5425233430109903" }],
      ["POST", "/tokens/search", { query: "data:5425233430109903*" }],
      ["POST", "/tokens/search", { query: "type:token", size: 5425233430109903 }],
      ["POST", "/applications", { name: "n", type: "5425233430109903" }],
    ];
    for (const [method, url, body] of invalid) {
      const answer = await server.request(method, url, {
        key: url === "/applications" ? server.bootstrapKey : revealer,
        headers: traced,
        body,
      });
      expectProblem(answer, 400);
      // A problem names the field and the rule, never the value it refused.
      expect(answer.text, `${method} ${url} ${JSON.stringify(body)}`).not.toContain("5425233430109903");
    }

    // -- bad requests: secrets in query strings, paths and headers --
    secrets.value("card in URLs and headers", "4263982640269299");
    const card = "4263982640269299";
    const bad: [string, string, Record<string, string>, string | null, number][] = [
      ["GET", `/tokens?svc-api-key=${revealer}&api_key=${revealer}`, {}, null, 401],
      ["GET", `/tokens?key=${revealer}&metadata.card=${card}`, {}, revealer, 200],
      ["GET", `/tokens?type=${card}`, {}, revealer, 400],
      ["GET", `/tokens/${card}`, {}, revealer, 404],
      ["DELETE", `/tokens/${card}?cvc=987`, {}, revealer, 404],
      ["GET", `/nowhere/${card}?key=${revealer}`, {}, null, 404],
      ["GET", `/tokens/%zz${card}`, {}, revealer, 400],
      ["GET", `/tokens/${card.repeat(40)}`, {}, revealer, 414],
      ["GET", "/tokens", { authorization: `Bearer ${revealer}` }, null, 401],
      ["GET", "/tokens", { "x-card-number": card, "svc-trace-id": card, "bt-trace-id": card }, revealer, 200],
      ["GET", "/tokens", { "svc-trace-id": revealer }, revealer, 200],
      ["POST", "/tokens", { "content-type": `application/card; number=${card}` }, revealer, 415],
    ];
    for (const [method, url, headers, key, status] of bad) {
      const answer = await server.request(method, url, {
        key,
        headers: { ...traced, ...headers },
        ...(method === "POST" && { rawBody: `{"data":"${card}"}`, contentType: headers["content-type"] }),
      });
      expect(answer.status, `${method} ${url}: ${answer.text}`).toBe(status);
      // A refused media type is named by its type/subtype, without the parameters the client sent.
      if (status === 415)
        expect(answer.body.detail).toMatch(/^Content-Type application\/card is not supported/);
    }
    // What fetch cannot send: a Host header, and headers Node's parser refuses (a control character, 64 KiB).
    // The server answers those two and closes at once, so the answer may be lost to a reset of the socket.
    const port = Number(new URL(server.url).port);
    const hosted = await rawRequest(
      port,
      `GET /tokens?key=${revealer} HTTP/1.1\r\nHost: ${card}.example\r\nSVC-API-KEY: ${revealer}\r\n` +
        `SVC-TRACE-ID: ${traceId}\r\nConnection: close\r\n\r\n`,
    );
    expect(hosted).toMatch(/^HTTP\/1\.1 200 /);
    for (const request of [
      `GET /tokens?key=${revealer} HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${revealer}\r\n` +
        `X-Card: ${card}\u0001\r\nConnection: close\r\n\r\n`,
      `GET /tokens HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${revealer}\r\nX-Big: ${card.repeat(5_000)}\r\n` +
        "Connection: close\r\n\r\n",
    ]) {
      expect(await rawRequest(port, request)).toMatch(/^(?:HTTP\/1\.1 (?:400|431) |$)/);
    }
  }, 120_000);

  it("has a scanner that finds every form of a needle, and the non-secret data where it is stored", async () => {
    const probe = new Secrets();
    probe.value("probe", "123-45-6789");
    probe.field("probe cvc", "cvc", "987");
    const hits = (text: string, encoding: BufferEncoding = "utf8") =>
      scan("probe", { bytes: Buffer.from(`..${text}..`, encoding), where: () => "" }, probe.needles).length;
    expect(hits("123456789")).toBeGreaterThan(0);
    expect(hits("x23456789x")).toBeGreaterThan(0); // an 8-digit window
    expect(hits("123-45-6789", "utf16le")).toBeGreaterThan(0);
    expect(hits(Buffer.from("<<123-45-6789>>").toString("base64"))).toBeGreaterThan(0);
    expect(hits(Buffer.from("<123-45-6789>>").toString("base64"))).toBeGreaterThan(0);
    expect(hits(Buffer.from("123-45-6789>>").toString("base64"))).toBeGreaterThan(0);
    expect(hits('{"cvc":"987"}')).toBeGreaterThan(0);
    expect(hits("2345678 987 cvc")).toBe(0);

    // The log was captured at trace level, holds the error tests' requests (by their trace id) and the reactor
    // errors among them: at error level, by class, code, status and digest.
    expect(logLines.length).toBeGreaterThan(50);
    const log = Buffer.from(logLines.join("\n"), "utf8");
    expect(contains(log, traceId)).toBe(true);
    const failures = logLines
      .map((line) => JSON.parse(line) as { msg?: string; level?: number; err?: Record<string, unknown> })
      .filter((line) => line.msg === "request failed");
    expect(failures.filter((line) => line.err?.code === "reactor-error").length).toBeGreaterThanOrEqual(10);
    for (const { level, err } of failures) {
      expect(level).toBe(50);
      expect(err).toMatchObject({ type: expect.any(String), digest: expect.stringMatching(/^[\w-]{16}$/) });
    }
    // Equal messages have equal digests; the reactor's different errors do not share one.
    const digests = failures.map((line) => line.err?.digest);
    expect(new Set(digests).size).toBeLessThan(digests.length);
    expect(new Set(digests).size).toBeGreaterThan(5);
    expect(secrets.needles.length).toBeGreaterThan(100);

    // The scan for what was not planted finds card numbers as they are written and key shapes.
    expect(unplanted(`{"msg":"x 4012 8888 8888 1881"}`)).toHaveLength(1);
    expect(unplanted(`{"msg":"x 4012-8888-8888-1881"}`)).toHaveLength(1);
    expect(unplanted(`{"msg":"key_mgt_${randomBytes(32).toString("base64url")}"}`)).toHaveLength(1);
    expect(unplanted(`{"time":1767225600000123,"reqId":"00000000-1234-4000-8000-123456789012"}`)).toEqual([]);
  });

  it.runIf(STORE === "sqlite")("leaves no secret in the SQLite file, its WAL or shm while running", () => {
    const files = sqliteFiles(sqliteDir!);
    const wal = files.find((file) => file.name === "tessera.db-wal");
    // Not yet checkpointed: the recent writes are in the WAL, where the scan finds the metadata.
    expect(wal?.bytes.length ?? 0).toBeGreaterThan(0);
    expect(contains(wal!.bytes, batch)).toBe(true);
    for (const id of tokenIds)
      expect(
        files.some((file) => contains(file.bytes, id)),
        id,
      ).toBe(true);
    const found = files.flatMap((file) => scan(file.name, sqliteHaystack(file), secrets.needles));
    expect(found).toEqual([]);
  });

  it.runIf(STORE === "sqlite")(
    "leaves no secret in the SQLite file after shutdown's checkpoint",
    async () => {
      await closeServer();
      const files = sqliteFiles(sqliteDir!);
      const main = files.find((file) => file.name === "tessera.db");
      expect(main).toBeDefined();
      expect(contains(main!.bytes, batch)).toBe(true);
      for (const id of tokenIds) expect(contains(main!.bytes, id), id).toBe(true);
      const found = files.flatMap((file) => scan(file.name, sqliteHaystack(file), secrets.needles));
      expect(found).toEqual([]);
    },
  );

  it.runIf(STORE === "postgres")("leaves no secret in a pg_dump of every table", () => {
    const dump = pgDump(server.database.env.TESSERA_DATABASE_URL!);
    expect(contains(dump, "COPY public.tokens ")).toBe(true);
    expect(contains(dump, batch)).toBe(true);
    for (const id of tokenIds) expect(contains(dump, id), id).toBe(true);
    expect(scan("pg_dump", dumpHaystack(dump), secrets.needles)).toEqual([]);
  });

  it.runIf(STORE === "postgres")("leaves no secret in the database's relation files", async (context) => {
    const files = await postgresRelationFiles(server.database.env.TESSERA_DATABASE_URL!);
    if (files === undefined) {
      context.skip("the cluster's data directory is not readable from here");
      return;
    }
    expect(files.some((file) => file.relation === "tokens")).toBe(true);
    expect(files.some((file) => contains(file.bytes, batch))).toBe(true);
    for (const id of tokenIds)
      expect(
        files.some((file) => contains(file.bytes, id)),
        id,
      ).toBe(true);
    const found = files.flatMap((file) =>
      scan(
        `relation ${file.relation}`,
        { bytes: file.bytes, where: (offset) => `byte ${offset} of file base/…/${file.file}` },
        secrets.needles,
      ),
    );
    expect(found).toEqual([]);
  });

  it("leaves no secret in the server log, through shutdown", async () => {
    await closeServer();
    const found = logHaystacks(logLines).flatMap(({ name, haystack }) =>
      scan(name, haystack, secrets.needles),
    );
    expect(found).toEqual([]);
    expect(logLines.flatMap((line) => unplanted(line))).toEqual([]);
  });
});
