import type { Store } from "./database.js";
import { openPostgres } from "./postgres.js";
import type { DatabaseConfig } from "./settings.js";
import { openSqlite } from "./sqlite.js";

export interface StoreOptions {
  readonly poolSize?: number;
}

export function openStore(config: DatabaseConfig, options: StoreOptions = {}): Store {
  return config.kind === "sqlite"
    ? openSqlite(config.path, config.walLimitBytes)
    : openPostgres(config.url, options.poolSize ?? 10);
}
