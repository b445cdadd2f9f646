/**
 * Rows read on every request that seldom change (an API key's Application, a reactor; tokens, whose data is read
 * far more often than written), kept in memory while the store's version of them (Store.configVersion,
 * Store.tokenVersion) stays the same. Exact, not merely recent: the version is read before every lookup, and any
 * write of such a row, by any connection, moves it in the write's own transaction. Where there is no version
 * (PostgreSQL; a store bound to a transaction) every lookup reads the row.
 *
 * `at` lets the lookups of one request share the versions read when it was authenticated (Principal's
 * versions): the request then sees these rows as they were at that moment, or newer, never older — and each
 * further lookup costs no read at all. Reading a version costs a read transaction, which after any commit (every
 * request commits an audit entry) is most of what a point lookup costs.
 */
export interface VersionedCache<Value extends object> {
  (key: string, load: () => Promise<Value | undefined>, at?: number): Promise<Value | undefined>;
  /**
   * Several keys at one version: those held at it are answered from memory, the rest loaded together by `load`,
   * which answers the ones it found. The result holds every key found, in no particular order.
   */
  many(
    keys: readonly string[],
    load: (missing: readonly string[]) => Promise<ReadonlyMap<string, Value>>,
    at?: number,
  ): Promise<Map<string, Value>>;
}

export function versionedCache<Value extends object>(
  version: () => number | undefined,
  capacity: number,
): VersionedCache<Value> {
  const entries = new Map<string, { version: number; value: Value }>();

  const held = (key: string, current: number): Value | undefined => {
    const hit = entries.get(key);
    return hit !== undefined && hit.version === current ? hit.value : undefined;
  };

  // `current` was read before loading: a commit landing in between leaves the entry looking stale, never being
  // stale. Each entry keeps its own version, so a lookup that started before a change and ends after it cannot
  // file an old row under the new version.
  const file = (key: string, current: number, value: Value | undefined): void => {
    // A lookup that began after this one may have filed a newer row meanwhile (the version only grows).
    const filed = entries.get(key);
    if (filed !== undefined && filed.version > current) return;
    entries.delete(key);
    // Misses are not kept: unknown keys would fill the cache at whatever pace a caller sends them.
    if (value === undefined) return;
    if (entries.size >= capacity) entries.delete(entries.keys().next().value as string);
    entries.set(key, { version: current, value: deepFreeze(value) });
  };

  const one = async (key: string, load: () => Promise<Value | undefined>, at?: number) => {
    const current = at ?? version();
    if (current === undefined) return load();
    const hit = held(key, current);
    if (hit !== undefined) return hit;
    const value = await load();
    file(key, current, value);
    return value;
  };

  return Object.assign(one, {
    async many(
      keys: readonly string[],
      load: (missing: readonly string[]) => Promise<ReadonlyMap<string, Value>>,
      at?: number,
    ): Promise<Map<string, Value>> {
      const current = at ?? version();
      if (current === undefined) return new Map(await load(keys));
      const found = new Map<string, Value>();
      const missing: string[] = [];
      for (const key of keys) {
        const hit = held(key, current);
        if (hit !== undefined) found.set(key, hit);
        else missing.push(key);
      }
      if (missing.length === 0) return found;
      const loaded = await load(missing);
      for (const key of missing) {
        const value = loaded.get(key);
        file(key, current, value);
        if (value !== undefined) found.set(key, value);
      }
      return found;
    },
  });
}

/** One object serves many requests: none of them may change what the next one sees. */
function deepFreeze<T extends object>(value: T): T {
  for (const member of Object.values(value)) {
    if (typeof member === "object" && member !== null && !Object.isFrozen(member)) deepFreeze(member);
  }
  return Object.freeze(value);
}
