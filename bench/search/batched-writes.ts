// Seeding on PostgreSQL (issue 23): the token service runs each precompiled INSERT of a write (the token, its
// index rows, its audit entry) as a statement of its own, one round trip each, about eight per token: 570 tokens/s.
// This wraps a PostgreSQL store's `write` for the seeder only: the service builds every row exactly as it does
// for a client (validation, expressions, fingerprints, blind indexes, encryption — its own code, not a copy),
// and the INSERTs it hands to `run` are held and sent at the end of the write, in the write's own transaction,
// as multi-row INSERTs of the same statement text. The server never runs this.
import { CompiledQuery } from "kysely";
import type { RunWrite, Store } from "../../packages/server/src/storage/database.js";

/** PostgreSQL takes at most 65,535 parameters in one statement. */
const MAX_PARAMETERS = 65_535;

/** `insert into "t" ("a", "b") values ($1, $2)`: the text up to VALUES, and the number of values per row. */
const SINGLE_ROW_INSERT = /^(insert into .+\)\s+values\s*)\((\$\d+(?:,\s*\$\d+)*)\)$/i;

export function batchWrites(store: Store): void {
  if (store.dialect !== "postgres") throw new Error("batched writes are for PostgreSQL seeding only");
  const write = store.write.bind(store);
  // Writes go through the store's `write`, which services call at the time they write: replacing it here sends
  // the seeder's writes through the buffer, and nothing else uses this store.
  Object.assign(store, {
    write: <T>(fn: Parameters<Store["write"]>[0], options?: { lazy?: boolean }): Promise<T> =>
      write(async (context) => {
        // Statement text → rows, in the order each text first came: the tokens before their index rows.
        const held = new Map<string, unknown[][]>();
        const run: RunWrite = (query) => {
          if (!SINGLE_ROW_INSERT.test(query.sql)) return context.run(query);
          const rows = held.get(query.sql);
          if (rows === undefined) held.set(query.sql, [[...query.parameters]]);
          else rows.push([...query.parameters]);
          return Promise.resolve();
        };
        const result = (await fn({ db: context.db, run })) as T;
        for (const [text, rows] of held) await insertMany(context.run, text, rows);
        return result;
      }, options),
  });
}

async function insertMany(run: RunWrite, text: string, rows: readonly unknown[][]): Promise<void> {
  const [, head] = SINGLE_ROW_INSERT.exec(text)!;
  const width = rows[0]!.length;
  const perStatement = Math.floor(MAX_PARAMETERS / width);
  for (let first = 0; first < rows.length; first += perStatement) {
    const chunk = rows.slice(first, first + perStatement);
    const tuples = chunk.map(
      (_, row) =>
        `(${Array.from({ length: width }, (_, column) => `$${row * width + column + 1}`).join(", ")})`,
    );
    await run(CompiledQuery.raw(`${head!}${tuples.join(", ")}`, chunk.flat()));
  }
}
