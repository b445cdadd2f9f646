import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import SQLite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { startCheckpointer } from "./checkpointer.js";

const LIMIT = 1024 * 1024;

/** Polls `check` until it holds or `ms` have passed; answers whether it held. */
async function eventually(check: () => boolean, ms = 20_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

describe("startCheckpointer", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const tempDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), "tessera-checkpoint-"));
    dirs.push(dir);
    return dir;
  };

  it("copies committed WAL frames into the database file while the writer keeps its own checkpoints off", async () => {
    const file = path.join(tempDir(), "db");
    const writer = new SQLite(file);
    writer.pragma("journal_mode = WAL");
    writer.pragma("wal_autocheckpoint = 0");
    writer.exec("create table t (v text)");
    const lost: unknown[] = [];
    const checkpointer = startCheckpointer({ file, walLimitBytes: LIMIT }, (error) => lost.push(error));
    try {
      const insert = writer.prepare("insert into t (v) values (?)");
      for (let i = 0; i < 200; i++) insert.run("x".repeat(1_000));
      // The rows are in the WAL; the database file grows only when a checkpoint copies them into it, and
      // nothing else here runs one.
      expect(await eventually(() => statSync(file).size > 200 * 1_000)).toBe(true);
    } finally {
      await checkpointer.stop();
      writer.close();
    }
    expect(lost).toEqual([]);
  });

  it("truncates a WAL file larger than its limit once no commit has come for a while", async () => {
    const file = path.join(tempDir(), "db");
    const writer = new SQLite(file);
    writer.pragma("journal_mode = WAL");
    writer.pragma("wal_autocheckpoint = 0");
    writer.exec("create table t (v text)");
    // One transaction of about 8 MB: the log file keeps that size after its frames are copied.
    const insert = writer.prepare("insert into t (v) values (?)");
    writer.transaction(() => {
      for (let i = 0; i < 2_000; i++) insert.run(String(i).repeat(4_000).slice(0, 4_000));
    })();
    const wal = `${file}-wal`;
    expect(statSync(wal).size).toBeGreaterThan(4 * LIMIT);
    const lost: unknown[] = [];
    const checkpointer = startCheckpointer({ file, walLimitBytes: LIMIT }, (error) => lost.push(error));
    try {
      expect(await eventually(() => statSync(wal).size <= LIMIT)).toBe(true);
      expect(writer.prepare("select count(*) as n from t").get()).toEqual({ n: 2_000 });
    } finally {
      await checkpointer.stop();
      writer.close();
    }
    expect(lost).toEqual([]);
  });

  it("reports the thread lost when it cannot work, so that the writer can take checkpoints back", async () => {
    const lost: unknown[] = [];
    let reported!: () => void;
    const wasLost = new Promise<void>((resolve) => (reported = resolve));
    startCheckpointer({ file: path.join(tempDir(), "missing-dir", "db"), walLimitBytes: LIMIT }, (error) => {
      lost.push(error);
      reported();
    });
    await wasLost;
    expect(lost).toHaveLength(1);
    expect(String(lost[0])).toMatch(/unable to open database file|directory does not exist/);
  });
});
