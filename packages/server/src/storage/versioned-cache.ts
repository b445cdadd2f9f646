/**
 * Rows read on every request that seldom change (an API key's Application, a reactor), kept in memory while the
 * store's version of them (Store.configVersion) stays the same. Exact, not merely recent: the version is read
 * before every lookup, and any write of such a row, by any connection, moves it in the write's own transaction.
 * Where there is no version (PostgreSQL; a store bound to a transaction) every lookup reads the row.
 *
 * `at` lets the lookups of one request share the version read when it was authenticated (Principal's
 * configVersion): the request then sees the configuration as it was at that moment, or newer, never older — and
 * each further lookup costs no read at all. Reading the version costs a read transaction, which after any commit
 * (every request commits an audit entry) is most of what a point lookup costs.
 */
export function versionedCache<Value extends object>(
  version: () => number | undefined,
  capacity: number,
): (key: string, load: () => Promise<Value | undefined>, at?: number) => Promise<Value | undefined> {
  const entries = new Map<string, { version: number; value: Value }>();
  return async (key, load, at) => {
    // Read before loading: a commit landing in between leaves the entry looking stale, never being stale. Each
    // entry keeps its own version, so a lookup that started before a change and ends after it cannot file an
    // old row under the new version.
    const current = at ?? version();
    if (current === undefined) return load();
    const hit = entries.get(key);
    if (hit !== undefined && hit.version === current) return hit.value;
    const value = await load();
    // A lookup that began after this one may have filed a newer row meanwhile (the version only grows).
    const filed = entries.get(key);
    if (filed !== undefined && filed.version > current) return value;
    entries.delete(key);
    // Misses are not kept: unknown keys would fill the cache at whatever pace a caller sends them.
    if (value === undefined) return undefined;
    if (entries.size >= capacity) entries.delete(entries.keys().next().value as string);
    entries.set(key, { version: current, value: deepFreeze(value) });
    return value;
  };
}

/** One object serves many requests: none of them may change what the next one sees. */
function deepFreeze<T extends object>(value: T): T {
  for (const member of Object.values(value)) {
    if (typeof member === "object" && member !== null && !Object.isFrozen(member)) deepFreeze(member);
  }
  return Object.freeze(value);
}
