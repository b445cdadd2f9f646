import { Migrator, type Migration, type MigrationProvider } from "kysely";
import type { Store } from "./database.js";
import * as m0001 from "./migrations/0001-initial.js";
import * as m0002 from "./migrations/0002-tokens.js";
import * as m0003 from "./migrations/0003-search-index.js";
import * as m0004 from "./migrations/0004-reactors.js";
import * as m0005 from "./migrations/0005-reactor-invocations.js";
import * as m0006 from "./migrations/0006-audit-log.js";
import * as m0007 from "./migrations/0007-idempotency-keys.js";
import * as m0008 from "./migrations/0008-token-generation.js";
import * as m0009 from "./migrations/0009-audit-log-layout.js";
import * as m0010 from "./migrations/0010-config-generation.js";
import * as m0011 from "./migrations/0011-webhook-destinations.js";
import * as m0012 from "./migrations/0012-key-custody.js";
import * as m0013 from "./migrations/0013-sessions.js";
import * as m0014 from "./migrations/0014-token-changes.js";

// Listed statically so the bundle and the migration set can never disagree about what exists.
const MIGRATIONS: Record<string, Migration> = {
  "0001-initial": m0001,
  "0002-tokens": m0002,
  "0003-search-index": m0003,
  "0004-reactors": m0004,
  "0005-reactor-invocations": m0005,
  "0006-audit-log": m0006,
  "0007-idempotency-keys": m0007,
  "0008-token-generation": m0008,
  "0009-audit-log-layout": m0009,
  "0010-config-generation": m0010,
  "0011-webhook-destinations": m0011,
  "0012-key-custody": m0012,
  "0013-sessions": m0013,
  "0014-token-changes": m0014,
};

const provider: MigrationProvider = { getMigrations: () => Promise.resolve(MIGRATIONS) };

export class MigrationError extends Error {
  constructor(
    readonly migration: string | undefined,
    cause: unknown,
  ) {
    super(`migration ${migration ?? "(unknown)"} failed`, { cause });
    this.name = "MigrationError";
  }
}

/**
 * Brings the schema up to `last` and no further: where a test of a migration leaves a store before adding the
 * rows that migration has to carry over.
 */
export async function migrateThrough(store: Store, last: keyof typeof MIGRATIONS): Promise<void> {
  const { error, results } = await new Migrator({ db: store.db, provider }).migrateTo(last);
  if (error !== undefined)
    throw new MigrationError(results?.find((r) => r.status === "Error")?.migrationName, error);
}

/**
 * Brings the schema up to date. Kysely's migrator takes a lock (an advisory lock on PostgreSQL), so instances
 * that start together apply each migration once.
 */
export async function migrateToLatest(store: Store): Promise<string[]> {
  const migrator = new Migrator({ db: store.db, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error !== undefined) throw new MigrationError(failed?.migrationName, error);
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
