// The storage ceiling for token creation: how many tokens per second a plain better-sqlite3 loop can commit on
// this machine, one transaction per token, with the pragmas, schema and row shapes Tessera's SQLite store uses.
// `POST /tokens` cannot beat it, whatever the HTTP stack costs, because every token is one durable commit.
// Run as its own process, like the HTTP ceiling, and to completion: the figures go to <resultFile> as JSON
// (RoundFigures, one transaction counting as one response), so that stray output on stdout cannot corrupt them.
// Usage: node --import tsx bench/storage-ceiling.ts <dbFile> <durationS> <resultFile>
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import SQLite from "better-sqlite3";
import { uuidv7 } from "../packages/server/src/crypto/uuid-v7.js";
import { openStore } from "../packages/server/src/storage/open.js";
import { migrateToLatest } from "../packages/server/src/storage/migrate.js";
import type { RoundFigures } from "./load.js";

const [dbFile, durationArg, resultFile] = process.argv.slice(2);
const durationS = Number(durationArg);
if (
  dbFile === undefined ||
  resultFile === undefined ||
  !Number.isFinite(durationS) ||
  durationS <= 0 ||
  existsSync(dbFile)
) {
  process.stderr.write("usage: storage-ceiling.ts <new dbFile> <durationS > 0> <resultFile>\n");
  process.exit(2);
}

// The real migrations through Tessera's own store, so the tables, keys, indexes and foreign keys are exactly the
// ones the server writes to. Its connection is closed again: the loop below must not pay for Kysely.
const store = openStore({ kind: "sqlite", path: dbFile, walLimitBytes: 64 * 1024 * 1024 });
await migrateToLatest(store);
await store.close();

// The pragmas of packages/server/src/storage/sqlite.ts (journal_mode=WAL also persists in the file).
const db = new SQLite(dbFile);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = FULL");
db.pragma("foreign_keys = ON");
db.pragma("busy_timeout = 5000");

const tenantId = randomUUID();
db.prepare("insert into tenants (id, name, created_by, created_at) values (?, ?, ?, ?)").run(
  tenantId,
  "storage ceiling",
  null,
  new Date().toISOString(),
);

// What `POST /tokens {"type":"card_number","data":"<16 digits>"}` writes: the card_number defaults (mask, no
// search indexes, no metadata, container /pci/high/, indexed under each of its paths: /pci/ and /pci/high/), a
// fingerprint that is the same HMAC for the same number, and AES-GCM output for `"<16 digits>"` (version byte,
// 12-byte IV, 16-byte tag, 18 bytes of JSON) in base64.
const CIPHERTEXT_BYTES = 1 + 12 + 16 + JSON.stringify("4242424242424242").length;
const fingerprint = randomBytes(32).toString("base64url");
const createdBy = randomUUID();
const insertToken = db.prepare(
  `insert into tokens (tenant_id, id, type, ciphertext, key_version, fingerprint, fingerprint_expression, mask,
     search_indexes, metadata, containers, expires_at, created_by, created_at, modified_by, modified_at)
   values (?, ?, 'card_number', ?, 1, ?, '{{ data }}', ?, '[]', '{}', '["/pci/high/"]', null, ?, ?, null, null)`,
);
const insertContainerPath = db.prepare(
  `insert into token_container_index (tenant_id, path, exact, created_at, token_id, type, expires_at)
   values (?, ?, ?, ?, ?, 'card_number', null)`,
);
const MASK = JSON.stringify("{{ data | reveal_last: 4 }}");
const createToken = db.transaction(() => {
  const id = uuidv7();
  const createdAt = new Date().toISOString();
  insertToken.run(
    tenantId,
    id,
    randomBytes(CIPHERTEXT_BYTES).toString("base64"),
    fingerprint,
    MASK,
    createdBy,
    createdAt,
  );
  insertContainerPath.run(tenantId, "/pci/", 0, createdAt, id);
  insertContainerPath.run(tenantId, "/pci/high/", 1, createdAt, id);
});

// Latencies per transaction, in milliseconds; grown by doubling so the loop does not allocate per token.
let latencies = new Float64Array(1 << 16);
let count = 0;
const started = process.hrtime.bigint();
const deadline = started + BigInt(Math.round(durationS * 1e9));
let now = started;
while (now < deadline) {
  const before = now;
  createToken();
  now = process.hrtime.bigint();
  if (count === latencies.length) {
    const grown = new Float64Array(latencies.length * 2);
    grown.set(latencies);
    latencies = grown;
  }
  latencies[count++] = Number(now - before) / 1e6;
}
const elapsedS = Number(now - started) / 1e9;
db.close();

const sorted = latencies.subarray(0, count).sort();
const percentile = (fraction: number) =>
  count === 0 ? Number.NaN : (sorted[Math.min(count - 1, Math.ceil(fraction * count) - 1)] ?? Number.NaN);
const figures: RoundFigures = {
  reqPerSec: count / elapsedS,
  p50Ms: percentile(0.5),
  p99Ms: percentile(0.99),
  responses: count,
  durationS: elapsedS,
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  statusCounts: {},
};
writeFileSync(resultFile, `${JSON.stringify(figures)}\n`);
