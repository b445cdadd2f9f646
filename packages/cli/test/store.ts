import { loadConfig } from "../../server/src/config.js";
import { type Store } from "../../server/src/storage/database.js";
import { openStore } from "../../server/src/storage/open.js";

/** Opens the store the servers under test use (their environment), runs `fn` on it, and closes it again. */
export async function withStore<T>(
  env: Record<string, string>,
  fn: (store: Store) => Promise<T>,
): Promise<T> {
  const store = openStore(loadConfig(env).database);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
