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
});
