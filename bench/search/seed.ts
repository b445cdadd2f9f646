// Loads a search corpus into a store in process, through the same service layer the HTTP routes use (tokenize:
// validation, expressions, blind indexes, encryption, index rows), so the seeded store is exactly what clients
// would have written, only without HTTP in between. A manifest next to the data records what was seeded and the
// values the search scenarios look for.
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import type { AccessRule } from "../../packages/server/src/access/rules.js";
import type { Principal } from "../../packages/server/src/access/principal.js";
import type { Clock } from "../../packages/server/src/shared/clock.js";
import { loadConfig } from "../../packages/server/src/config.js";
import { AppError } from "../../packages/server/src/server/errors.js";
import { bootstrap, createLogger, openVault } from "../../packages/server/src/main.js";
import type { CreateTokenInput } from "../../packages/server/src/tokens/draft.js";
import { TOKEN_TYPES, type TokenType } from "../../packages/server/src/tokens/token-types.js";
import type { TokenRecord } from "../../packages/server/src/tokens/types.js";
import { batchWrites } from "./batched-writes.js";
import { corpus, customerIdOf, type CorpusToken } from "./corpus.js";

export type StoreKind = "sqlite" | "postgres";

/** Where a corpus lives. `dir` holds the manifest and the master key, and on SQLite the database too. */
export type SeedTarget =
  | { readonly kind: "sqlite"; readonly dir: string }
  | { readonly kind: "postgres"; readonly dir: string; readonly url: string };

/** The corpus is the same on every run: figures from different runs compare like with like. */
const SEED = 20_260_101;
/** The most tokenize accepts in one call, hence in one transaction. */
const BATCH_SIZE = 1000;
// created_at spreads uniformly over [FROM, TO): 2020-01-01 up to and including 2026-10-31.
const FROM = Date.UTC(2020, 0, 1);
const TO = Date.UTC(2026, 10, 1);
/** The lower bound of scenario (c), `created_at:[2025-01-01 TO *]`. */
export const RECENT_FROM = "2025-01-01T00:00:00.000Z";
const MANIFEST = "seed.json";
/**
 * SQLite's page cache for the seeding connection, in KiB (negative = a size, not a page count). Blind values,
 * fingerprints and customer ids land at random places in their indexes; with the default 2 MB cache every
 * insert then re-reads index pages from the OS, and a million-token seed slows to a crawl as the file grows.
 * Memory only: durability (synchronous=FULL, a commit per batch) is the server's own.
 */
const SEED_CACHE_KIB = 1024 * 1024;
/**
 * Batches are paced slightly short of their share: one with more expiring tokens than the last (an extra clock
 * read each) would otherwise run past its end and pile its last tokens onto one instant.
 */
const PACE_MARGIN = 1.02;
const MIGRATIONS_DIR = fileURLToPath(
  new URL("../../packages/server/src/storage/migrations/", import.meta.url),
);

/**
 * The searching Application: one rule per top-level container the corpus uses. PCI, PII and bank data come back
 * masked, as a real caller would usually see them, so each result page pays for its mask expressions.
 */
const SEARCH_RULES: AccessRule[] = [
  ["/pci/", "mask"],
  ["/pii/", "mask"],
  ["/bank/", "mask"],
  ["/general/", "reveal"],
  ["/customers/", "reveal"],
].map(([container, transform], i) => ({
  priority: i + 1,
  container: container!,
  transform: transform as AccessRule["transform"],
  permissions: ["token:create", "token:search"],
}));

export interface SeedCounts {
  readonly total: number;
  readonly byType: Readonly<Record<TokenType, number>>;
  /** Scenario (c): social_security_number tokens with region eu created on or after RECENT_FROM. */
  readonly ssnEuRecent: number;
  /** Scenario (d): tokens with a container under /pci/. */
  readonly pciSubtree: number;
  readonly customerContainers: number;
  readonly expiring: number;
}

export interface SeedManifest {
  readonly format: 1;
  readonly store: StoreKind;
  /** The database file, or the PostgreSQL server and database (never credentials). */
  readonly database: string;
  readonly tokens: number;
  readonly seed: number;
  /**
   * A digest of the migration sources: a store seeded under another schema is refused, not half-trusted, unless
   * that schema is an earlier state of this one (later migrations only added).
   */
  readonly schema: string;
  readonly seededAt: string;
  readonly seconds: number;
  readonly tokensPerSecond: number;
  /** The searching Application's key. The vault holds synthetic data only and lives in a private directory. */
  readonly searchKey: string;
  readonly known: {
    /** The data of exactly one social_security_number token. */
    readonly ssn: string;
    readonly customerId: string;
    readonly customerTokens: number;
  };
  readonly counts: SeedCounts;
}

/** The TESSERA_* settings a server needs to open `target`: the same for the seeder and the benchmarked server. */
export function tesseraEnv(target: SeedTarget): Record<string, string> {
  return target.kind === "sqlite"
    ? // No master key setting: like `npm start`, the server uses the development key file in the data dir.
      { TESSERA_DATA_DIR: target.dir, TESSERA_DATABASE_URL: `sqlite:${path.join(target.dir, "tessera.db")}` }
    : {
        TESSERA_DATA_DIR: target.dir,
        TESSERA_DATABASE_URL: target.url,
        TESSERA_MASTER_KEY_FILE: path.join(target.dir, "master.key"),
      };
}

function databaseOf(target: SeedTarget): string {
  if (target.kind === "sqlite") return path.join(target.dir, "tessera.db");
  const url = new URL(target.url);
  return `postgres://${url.host}${url.pathname}`;
}

/** The digest of the first `count` migration sources (all of them by default), in the order they run. */
function schemaDigest(count = Infinity): string {
  const hash = createHash("sha256");
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((file) => !file.endsWith(".test.ts"))
    .sort();
  for (const file of files.slice(0, count)) {
    hash.update(file).update(readFileSync(path.join(MIGRATIONS_DIR, file)));
  }
  return hash.digest("hex").slice(0, 16);
}

/**
 * How many migrations came after the ones a corpus was seeded under, or undefined if its schema is not an earlier
 * state of this one (a migration it ran has changed or gone). Later migrations are applied by the server when
 * it opens the store, as they would be on any upgraded vault, so such a corpus stays usable.
 */
function migrationsSince(schema: string): number | undefined {
  const total = readdirSync(MIGRATIONS_DIR).filter((file) => !file.endsWith(".test.ts")).length;
  for (let count = total; count >= 1; count--) {
    if (schemaDigest(count) === schema) return total - count;
  }
  return undefined;
}

/**
 * The manifest of a corpus seeded earlier into `target`, or undefined if the directory holds none. A corpus of
 * another store, size or schema is an error: its figures would be silently wrong.
 */
export async function readManifest(target: SeedTarget, tokens: number): Promise<SeedManifest | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(target.dir, MANIFEST), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const manifest = JSON.parse(text) as SeedManifest;
  const wanted = { store: target.kind, database: databaseOf(target), tokens };
  const mismatches = (Object.keys(wanted) as (keyof typeof wanted)[])
    .filter((field) => manifest[field] !== wanted[field])
    .map((field) => `${field} ${String(manifest[field])} (wanted ${String(wanted[field])})`);
  const since = migrationsSince(manifest.schema);
  if (since === undefined) {
    mismatches.push(`schema ${manifest.schema} (not an earlier state of ${schemaDigest()})`);
  }
  if (manifest.format !== 1 || mismatches.length > 0) {
    throw new Error(
      `${target.dir} holds another corpus: ${mismatches.join(", ") || "an older manifest format"}. ` +
        "Seed into a new directory (a changed schema needs a new seed).",
    );
  }
  if (since !== undefined && since > 0) {
    process.stderr.write(
      `${target.dir} was seeded before the last ${since} migration(s); opening it applies them\n`,
    );
  }
  return manifest;
}

/**
 * The service reads the clock a few times per token (created_at, the id's timestamp, the expiry check, the key
 * cache), so this clock moves on every read. Each batch starts at its own share of the span and paces its reads
 * by the previous batch's reads per token (the first assumes two), so created_at is spread evenly and
 * increasing, and no error builds up from batch to batch. Nothing runs past TO.
 */
function spreadingClock(total: number) {
  let base = FROM;
  let end = FROM + 1;
  let step = 0;
  let reads = 0;
  let readsPerToken = 2;
  const at = (index: number) => FROM + ((TO - FROM) * index) / total;
  const clock: Clock = { now: () => new Date(Math.min(base + Math.floor(reads++ * step), end - 1)) };
  return {
    clock,
    startBatch(first: number, count: number): void {
      base = at(first);
      end = at(first + count);
      step = (end - base) / (count * readsPerToken * PACE_MARGIN);
      reads = 0;
    },
    endBatch(count: number): void {
      readsPerToken = reads / count;
    },
  };
}

export interface SeedOptions {
  readonly target: SeedTarget;
  readonly tokens: number;
  /** Progress and the final rate go here (stderr for the command-line tools). */
  readonly progress: NodeJS.WriteStream;
}

/** Seeds an empty store and writes the manifest; the manifest's presence means the seed completed. */
export async function seedSearch(options: SeedOptions): Promise<SeedManifest> {
  const { target, tokens } = options;
  // Taken before the schema is created: the sources might change while a long seed runs.
  const schema = schemaDigest();
  if (target.kind === "postgres") {
    await writeFile(path.join(target.dir, "master.key"), `${randomBytes(32).toString("base64")}\n`, {
      mode: 0o600,
      flag: "wx",
    });
  }
  const config = loadConfig({ ...tesseraEnv(target), TESSERA_LOG_LEVEL: "error" });
  const spread = spreadingClock(tokens);
  const vault = await openVault(config, createLogger(config), spread.clock);
  try {
    if (target.kind === "sqlite")
      await sql`pragma cache_size = ${sql.raw(String(-SEED_CACHE_KIB))}`.execute(vault.store.db);
    // The management key is printed to the given output only; nobody needs it afterwards.
    const created = await bootstrap(vault, config, { write: () => undefined });
    if (created === undefined) {
      throw new Error(`${databaseOf(target)} already holds a tenant: seed into an empty store`);
    }
    const management: Principal = { tenantId: created.tenant.id, application: created.application };
    const searcher = await vault.applications.create(management, {
      name: "search benchmark",
      type: "private",
      permissions: [],
      rules: SEARCH_RULES,
    });
    const principal: Principal = {
      tenantId: searcher.application.tenantId,
      application: searcher.application,
    };

    // PostgreSQL: the service's INSERTs sent as multi-row statements at the end of each batch (batched-writes.ts).
    if (target.kind === "postgres") batchWrites(vault.store);
    const draw = corpus(SEED, tokens);
    const tally = createTally();
    const customerTokens = new Uint32Array(draw.customers);
    const middle = Math.floor(tokens / 2);
    let knownCustomer = 0;
    let knownSsn: string | undefined;
    const bar = progressBar(tokens, options.progress);
    const started = process.hrtime.bigint();
    for (let first = 0; first < tokens; first += BATCH_SIZE) {
      const batch: CorpusToken[] = [];
      for (let index = first; index < Math.min(first + BATCH_SIZE, tokens); index++) {
        const token = draw.next(index);
        batch.push(token);
        customerTokens[token.customer]! += 1;
        if (index === middle) knownCustomer = token.customer;
        // The known SSN is the last one at or before the middle of the corpus (or, failing that, the first after).
        if (token.input.type === "social_security_number" && (knownSsn === undefined || index <= middle)) {
          knownSsn = token.input.data as string;
        }
      }
      for (let attempt = 1; ; attempt++) {
        spread.startBatch(first, batch.length);
        try {
          await vault.tokens.tokenize(
            principal,
            batch.map((token) => token.input),
            {
              // The corpus is already in the service's input shape; the route's schema has nothing to add.
              parse: (node) => node as CreateTokenInput,
              present: (view) => tally.add(view.record),
            },
          );
          break;
        } catch (error) {
          if (attempt >= MAX_ATTEMPTS || !onlyTimeLimits(error)) throw error;
          options.progress.write(`batch at ${first} hit the expression time limit; retrying\n`);
        }
      }
      spread.endBatch(batch.length);
      bar.update(first + batch.length);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    bar.finish(seconds);
    if (knownSsn === undefined) throw new Error("the corpus is too small to hold a social_security_number");

    const manifest: SeedManifest = {
      format: 1,
      store: target.kind,
      database: databaseOf(target),
      tokens,
      seed: SEED,
      schema,
      seededAt: new Date().toISOString(),
      seconds,
      tokensPerSecond: tokens / seconds,
      searchKey: searcher.key,
      known: {
        ssn: knownSsn,
        customerId: customerIdOf(knownCustomer),
        customerTokens: customerTokens[knownCustomer]!,
      },
      counts: tally.counts(),
    };
    // Written whole and then renamed: a directory with a manifest always holds a complete corpus.
    const file = path.join(target.dir, MANIFEST);
    await writeFile(`${file}.partial`, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    await rename(`${file}.partial`, file);
    return manifest;
  } finally {
    await vault.close();
  }
}

/**
 * Expressions have a wall-clock time limit (100 ms). On a machine shared with test runs a process can stall for
 * that long, and one template of a thousand then fails the whole batch with "took too long". The batch is one
 * transaction, rolled back whole and tallied only after it commits, and the clock restarts at the batch's own
 * share of the span, so trying it again seeds exactly what an unstalled run would have.
 */
const MAX_ATTEMPTS = 3;

function onlyTimeLimits(error: unknown): boolean {
  if (!(error instanceof AppError) || error.errors === undefined) return false;
  const messages = Object.values(error.errors).flat();
  return messages.length > 0 && messages.every((message) => message === "took too long");
}

/** Counts from the stored records, so that they hold whatever created_at the clock actually gave. */
function createTally() {
  const byType = Object.fromEntries(TOKEN_TYPES.map((type) => [type, 0])) as Record<TokenType, number>;
  let total = 0;
  let ssnEuRecent = 0;
  let pciSubtree = 0;
  let customerContainers = 0;
  let expiring = 0;
  return {
    add(record: TokenRecord): null {
      total++;
      byType[record.type]++;
      if (
        record.type === "social_security_number" &&
        record.metadata.region === "eu" &&
        record.createdAt >= RECENT_FROM
      ) {
        ssnEuRecent++;
      }
      if (record.containers.some((c) => c.startsWith("/pci/"))) pciSubtree++;
      if (record.containers.some((c) => c.startsWith("/customers/"))) customerContainers++;
      if (record.expiresAt !== null) expiring++;
      return null;
    },
    counts: (): SeedCounts => ({ total, byType, ssnEuRecent, pciSubtree, customerContainers, expiring }),
  };
}

const BAR_WIDTH = 30;
const REDRAW_MS = 250;

/** Redraws in place on a terminal; elsewhere (a log file, CI) prints a line every tenth of the way. */
function progressBar(total: number, out: NodeJS.WriteStream) {
  const started = Date.now();
  let lastDraw = 0;
  let lastTenth = 0;
  const line = (done: number) => {
    const elapsedS = (Date.now() - started) / 1000;
    const rate = done / Math.max(elapsedS, 1e-3);
    const filled = Math.round((BAR_WIDTH * done) / total);
    const etaS = rate > 0 ? (total - done) / rate : 0;
    return (
      `seeding [${"#".repeat(filled)}${".".repeat(BAR_WIDTH - filled)}] ` +
      `${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")} ` +
      `${Math.round(rate).toLocaleString("en-US")} tokens/s, ${formatDuration(elapsedS)} elapsed, ` +
      `${formatDuration(etaS)} left`
    );
  };
  return {
    update(done: number): void {
      if (out.isTTY) {
        const now = Date.now();
        if (now - lastDraw < REDRAW_MS && done < total) return;
        lastDraw = now;
        out.write(`\r${line(done)}\u001b[K`);
      } else {
        const tenth = Math.floor((10 * done) / total);
        if (tenth > lastTenth) {
          lastTenth = tenth;
          out.write(`${line(done)}\n`);
        }
      }
    },
    finish(seconds: number): void {
      if (out.isTTY) out.write("\n");
      out.write(
        `seeded ${total.toLocaleString("en-US")} tokens in ${formatDuration(seconds)}: ` +
          `${Math.round(total / seconds).toLocaleString("en-US")} tokens/s\n`,
      );
    },
  };
}

export function formatDuration(seconds: number): string {
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}
