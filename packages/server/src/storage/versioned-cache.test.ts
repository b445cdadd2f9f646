import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { versionedCache } from "./versioned-cache.js";

describe("versionedCache", () => {
  it("loads once while the version stays, and again once it moves", async () => {
    let version = 1;
    let loads = 0;
    const cached = versionedCache<{ n: number }>(() => version, 10);
    const load = async () => ({ n: ++loads });
    expect(await cached("a", load)).toEqual({ n: 1 });
    expect(await cached("a", load)).toEqual({ n: 1 });
    version = 2;
    expect(await cached("a", load)).toEqual({ n: 2 });
    expect(loads).toBe(2);
  });

  it("loads every time where the store has no version", async () => {
    let loads = 0;
    const cached = versionedCache<{ n: number }>(() => undefined, 10);
    await cached("a", async () => ({ n: ++loads }));
    await cached("a", async () => ({ n: ++loads }));
    expect(loads).toBe(2);
  });

  it("checks against a version read earlier in the request when given one, without reading it again", async () => {
    let reads = 0;
    let loads = 0;
    const cached = versionedCache<{ n: number }>(() => {
      reads += 1;
      return 7;
    }, 10);
    const load = async () => ({ n: ++loads });
    expect(await cached("a", load, 5)).toEqual({ n: 1 });
    expect(await cached("a", load, 5)).toEqual({ n: 1 });
    // Filed at 5: a request authenticated at 6 reads the row again.
    expect(await cached("a", load, 6)).toEqual({ n: 2 });
    expect(reads).toBe(0);
    expect(await cached("a", load)).toEqual({ n: 3 });
    expect(reads).toBe(1);
  });

  it("does not keep misses", async () => {
    let loads = 0;
    const cached = versionedCache<{ n: number }>(() => 1, 10);
    const missing = async () => {
      loads += 1;
      return undefined;
    };
    expect(await cached("x", missing)).toBeUndefined();
    expect(await cached("x", missing)).toBeUndefined();
    expect(loads).toBe(2);
  });

  it("never files a row read before a change under the version after it", async () => {
    let version = 1;
    const cached = versionedCache<{ state: string }>(() => version, 10);
    // The first lookup reads version 1 and the old row; the change lands before it is filed.
    const slow = cached("a", async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return { state: "old" };
    });
    version = 2;
    expect(await cached("a", async () => ({ state: "new" }))).toEqual({ state: "new" });
    expect(await slow).toEqual({ state: "old" });
    expect(await cached("a", async () => ({ state: "reloaded" }))).toEqual({ state: "new" });
  });

  it("hands out rows no caller can change", async () => {
    const cached = versionedCache<{ rules: { names: string[] }[] }>(() => 1, 10);
    const row = await cached("a", async () => ({ rules: [{ names: ["x"] }] }));
    expect(() => row!.rules[0]!.names.push("y")).toThrow(TypeError);
    expect(() => row!.rules.pop()).toThrow(TypeError);
  });

  it("answers what the latest load at the current version answered, for any order of lookups and changes", async () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant("get" as const), key: fc.constantFrom("a", "b", "c") }),
      fc.record({ kind: fc.constant("write" as const), key: fc.constantFrom("a", "b", "c") }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 60 }),
        fc.integer({ min: 1, max: 3 }),
        async (steps, capacity) => {
          // The "database": a value per key and a version every write moves, as the triggers of migration 0010 do.
          const rows = new Map<string, number>();
          let version = 0;
          const cached = versionedCache<{ value: number | undefined }>(() => version, capacity);
          for (const s of steps) {
            if (s.kind === "write") {
              rows.set(s.key, (rows.get(s.key) ?? 0) + 1);
              version += 1;
            } else {
              const got = await cached(s.key, async () => ({ value: rows.get(s.key) }));
              expect(got).toEqual({ value: rows.get(s.key) });
            }
          }
        },
      ),
    );
  });

  it("answers several keys at once from memory, loading only those it does not hold at the version", async () => {
    let version = 1;
    const loads: (readonly string[])[] = [];
    const cached = versionedCache<{ key: string; at: number }>(() => version, 10);
    const load = async (missing: readonly string[]) => {
      loads.push(missing);
      return new Map(missing.filter((k) => k !== "gone").map((k) => [k, { key: k, at: version }]));
    };
    expect(await cached("a", async () => ({ key: "a", at: 0 }))).toEqual({ key: "a", at: 0 });
    const first = await cached.many(["a", "b", "gone"], load);
    expect(Object.fromEntries(first)).toEqual({ a: { key: "a", at: 0 }, b: { key: "b", at: 1 } });
    expect(loads).toEqual([["b", "gone"]]);
    // A miss is not kept, so "gone" is asked for again; "a" and "b" are not.
    await cached.many(["a", "b", "gone"], load);
    expect(loads).toEqual([["b", "gone"], ["gone"]]);
    version = 2;
    const after = await cached.many(["a", "b"], load);
    expect(Object.fromEntries(after)).toEqual({ a: { key: "a", at: 2 }, b: { key: "b", at: 2 } });
    expect(loads.at(-1)).toEqual(["a", "b"]);
    // Held at 2, so a request still at 1 loads "a" again (without filing it over the newer entry); one at 2 loads nothing.
    expect((await cached.many(["a"], load, 1)).get("a")).toEqual({ key: "a", at: 2 });
    expect(loads.at(-1)).toEqual(["a"]);
    const held = loads.length;
    await cached.many(["a", "b"], load, 2);
    expect(loads).toHaveLength(held);
  });

  it("loads every key every time where the store has no version", async () => {
    const loads: (readonly string[])[] = [];
    const cached = versionedCache<{ n: number }>(() => undefined, 10);
    const load = async (missing: readonly string[]) => {
      loads.push(missing);
      return new Map(missing.map((k) => [k, { n: 1 }]));
    };
    await cached.many(["a", "b"], load);
    await cached.many(["a", "b"], load);
    expect(loads).toEqual([
      ["a", "b"],
      ["a", "b"],
    ]);
  });

  it("answers what the database holds, key by key or several at once, whatever writes and deletes come between", async () => {
    const keys = fc.constantFrom("a", "b", "c", "d");
    const step = fc.oneof(
      fc.record({ kind: fc.constant("get" as const), key: keys }),
      fc.record({ kind: fc.constant("many" as const), keys: fc.uniqueArray(keys, { maxLength: 4 }) }),
      fc.record({ kind: fc.constant("write" as const), key: keys }),
      fc.record({ kind: fc.constant("delete" as const), key: keys }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 60 }),
        fc.integer({ min: 1, max: 4 }),
        async (steps, capacity) => {
          const rows = new Map<string, number>();
          let version = 0;
          const cached = versionedCache<{ value: number }>(() => version, capacity);
          const inDatabase = (key: string) => (rows.has(key) ? { value: rows.get(key)! } : undefined);
          for (const s of steps) {
            if (s.kind === "write" || s.kind === "delete") {
              if (s.kind === "write") rows.set(s.key, (rows.get(s.key) ?? 0) + 1);
              else rows.delete(s.key);
              version += 1;
            } else if (s.kind === "get") {
              expect(await cached(s.key, async () => inDatabase(s.key))).toEqual(inDatabase(s.key));
            } else {
              const got = await cached.many(
                s.keys,
                async (missing) =>
                  new Map(missing.flatMap((k) => (rows.has(k) ? [[k, inDatabase(k)!]] : []))),
              );
              const expected = s.keys.flatMap((k) => (rows.has(k) ? [[k, inDatabase(k)]] : []));
              expect(Object.fromEntries(got)).toEqual(Object.fromEntries(expected));
            }
          }
        },
      ),
    );
  });
});
