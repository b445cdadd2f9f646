// The storage ceiling for token creation on PostgreSQL, the analogue of storage-ceiling.ts: how many tokens per
// second plain `pg` clients can commit into the benchmark's cluster, one transaction per token, with the schema and
// row shapes Tessera's PostgreSQL store writes, at the benchmark's concurrency (one client per connection the load
// generator opens). `POST /tokens` on PostgreSQL cannot beat it: every token is one durable commit, and PostgreSQL
// shares WAL flushes between concurrent commits as it does for Tessera's. The rows go to a database of their own in
// the same cluster (same WAL, same disk), created and migrated here and dropped afterwards, so Tessera's tables do
// not grow. Figures go to <resultFile> as JSON (RoundFigures, one transaction counting as one response).
// Usage: node --import tsx bench/storage-ceiling-postgres.ts <clusterUrl> <durationS> <clients> <resultFile>
import { randomBytes, randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import pg from "pg";
import { uuidv7 } from "../packages/server/src/crypto/uuid-v7.js";
import { openStore } from "../packages/server/src/storage/open.js";
import { migrateToLatest } from "../packages/server/src/storage/migrate.js";
import type { RoundFigures } from "./load.js";

const [clusterUrl, durationArg, clientsArg, resultFile] = process.argv.slice(2);
const durationS = Number(durationArg);
const clients = Number(clientsArg);
if (
  clusterUrl === undefined ||
  resultFile === undefined ||
  !Number.isFinite(durationS) ||
  durationS <= 0 ||
  !Number.isSafeInteger(clients) ||
  clients < 1
) {
  process.stderr.write(
    "usage: storage-ceiling-postgres.ts <clusterUrl> <durationS > 0> <clients ≥ 1> <resultFile>\n",
  );
  process.exit(2);
}

const database = `storage_ceiling_${randomBytes(6).toString("hex")}`;
const admin = new pg.Client({ connectionString: clusterUrl });
await admin.connect();
await admin.query(`create database ${database}`);
const url = new URL(clusterUrl);
url.pathname = `/${database}`;

let figures: RoundFigures;
try {
  // The real migrations through Tessera's own store, so the tables, keys, indexes, collations and foreign keys are
  // exactly the ones the server writes to; its pool is closed again: the loop must not pay for Kysely.
  const store = openStore({ kind: "postgres", url: url.href });
  await migrateToLatest(store);
  await store.close();
  figures = await measure(url.href);
} finally {
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.end();
}
writeFileSync(resultFile, `${JSON.stringify(figures)}\n`);

async function measure(databaseUrl: string): Promise<RoundFigures> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: clients });
  // An idle client ended by the database's drop below must not crash this process after its figures are in.
  pool.on("error", () => undefined);
  try {
    const tenantId = randomUUID();
    await pool.query("insert into tenants (id, name, created_by, created_at) values ($1, $2, $3, $4)", [
      tenantId,
      "storage ceiling",
      null,
      new Date().toISOString(),
    ]);
    // What `POST /tokens {"type":"card_number","data":"<16 digits>"}` writes, as in storage-ceiling.ts: the token
    // and its two container-index rows (/pci/ and /pci/high/), with AES-GCM-sized ciphertext.
    const ciphertextBytes = 1 + 12 + 16 + JSON.stringify("4242424242424242").length;
    const fingerprint = randomBytes(32).toString("base64url");
    const createdBy = randomUUID();
    const mask = JSON.stringify("{{ data | reveal_last: 4 }}");
    const latencies: number[] = [];
    const started = process.hrtime.bigint();
    const deadline = started + BigInt(Math.round(durationS * 1e9));
    let finished = started;

    // Plain parameterised queries, each awaited, as a straightforward `pg` program writes them.
    const loop = async () => {
      const client = await pool.connect();
      try {
        for (let now = process.hrtime.bigint(); now < deadline; now = process.hrtime.bigint()) {
          const id = uuidv7();
          const createdAt = new Date().toISOString();
          await client.query("begin");
          await client.query(
            `insert into tokens (tenant_id, id, type, ciphertext, key_version, fingerprint, fingerprint_expression,
               mask, search_indexes, metadata, containers, expires_at, created_by, created_at, modified_by,
               modified_at)
             values ($1, $2, 'card_number', $3, 1, $4, '{{ data }}', $5, '[]', '{}', '["/pci/high/"]', null, $6,
               $7, null, null)`,
            [
              tenantId,
              id,
              randomBytes(ciphertextBytes).toString("base64"),
              fingerprint,
              mask,
              createdBy,
              createdAt,
            ],
          );
          for (const [path, exact] of [
            ["/pci/", 0],
            ["/pci/high/", 1],
          ] as const) {
            await client.query(
              `insert into token_container_index (tenant_id, path, exact, created_at, token_id, type, expires_at)
               values ($1, $2, $3, $4, $5, 'card_number', null)`,
              [tenantId, path, exact, createdAt, id],
            );
          }
          await client.query("commit");
          const after = process.hrtime.bigint();
          latencies.push(Number(after - now) / 1e6);
          if (after > finished) finished = after;
        }
      } finally {
        client.release();
      }
    };
    await Promise.all(Array.from({ length: clients }, loop));

    const count = latencies.length;
    const sorted = Float64Array.from(latencies).sort();
    const percentile = (fraction: number) =>
      count === 0 ? Number.NaN : (sorted[Math.min(count - 1, Math.ceil(fraction * count) - 1)] ?? Number.NaN);
    const elapsedS = Number(finished - started) / 1e9;
    return {
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
  } finally {
    await pool.end();
  }
}
