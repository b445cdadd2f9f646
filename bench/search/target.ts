// Where the search benchmark's corpus lives, and undoing whatever this process set up for it: a temporary data
// directory, a throwaway PostgreSQL cluster. Only what this process created is ever removed or stopped.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { mkdir, mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { inspect } from "node:util";
import { findPostgresBin, startCluster } from "../../packages/server/test/postgres-cluster.js";
import { MAX_TOKENS } from "./corpus.js";
import type { SeedTarget, StoreKind } from "./seed.js";

export interface CorpusSettings {
  readonly tokens: number;
  readonly store: StoreKind;
  readonly dataDir?: string;
}

/** The `parseArgs` options naming a corpus, shared by every search tool. */
export const CORPUS_OPTIONS = {
  tokens: { type: "string" },
  store: { type: "string" },
  data: { type: "string" },
} as const;

/** The options both search tools share; throws with a message fit for the usage line. */
export function corpusSettings(values: { tokens?: string; store?: string; data?: string }): CorpusSettings {
  const tokens = Number(values.tokens ?? "1000000");
  if (!Number.isSafeInteger(tokens) || tokens < 1000 || tokens > MAX_TOKENS) {
    throw new Error(`--tokens must be an integer from 1000 to ${MAX_TOKENS}`);
  }
  const store = values.store ?? "sqlite";
  if (store !== "sqlite" && store !== "postgres") throw new Error("--store must be sqlite or postgres");
  return { tokens, store, ...(values.data !== undefined && { dataDir: values.data }) };
}

/** Synchronous, so that the exit handler can run them too. */
const undo: (() => void)[] = [];

/** Undoes everything registered, newest first; safe to call more than once. */
export function cleanUp(): void {
  for (let step = undo.pop(); step !== undefined; step = undo.pop()) {
    try {
      step();
    } catch (error) {
      process.stderr.write(`cleanup: ${(error as Error).message}\n`);
    }
  }
}

export function onCleanUp(step: () => void): void {
  undo.push(step);
}

export interface ResolvedTarget {
  readonly target: SeedTarget;
  /** False for a temporary directory or a throwaway cluster: the corpus dies with this run. */
  readonly reusable: boolean;
}

/**
 * `dataDir` given: that directory (created if missing, removed again if this run created it and fails before a
 * corpus is complete). Otherwise a temporary directory removed at exit. PostgreSQL is TESSERA_DATABASE_URL, or a
 * cluster started for this run; a corpus in a throwaway cluster cannot outlive it, so `dataDir` needs the URL.
 */
export async function resolveTarget(kind: StoreKind, dataDir: string | undefined): Promise<ResolvedTarget> {
  const url = kind === "postgres" ? process.env.TESSERA_DATABASE_URL?.trim() || undefined : undefined;
  if (kind === "postgres" && url === undefined && dataDir !== undefined) {
    throw new Error(
      "--data with --store postgres needs TESSERA_DATABASE_URL: a throwaway cluster is gone after the run",
    );
  }
  const dir = dataDir === undefined ? await temporaryDir() : await ownDir(path.resolve(dataDir));
  if (kind === "sqlite") return { target: { kind, dir }, reusable: dataDir !== undefined };
  if (url !== undefined) return { target: { kind, dir, url }, reusable: dataDir !== undefined };
  const bin = findPostgresBin();
  if (bin === undefined) throw new Error("PostgreSQL (initdb) not found: set TESSERA_DATABASE_URL");
  process.stderr.write("starting a throwaway PostgreSQL cluster\n");
  const cluster = await startCluster(bin);
  onCleanUp(() => cluster.stop());
  return { target: { kind, dir, url: cluster.url }, reusable: false };
}

async function temporaryDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "tessera-search-"));
  onCleanUp(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A directory this run may seed into: existing (the manifest decides whether it is usable), or made here. */
async function ownDir(dir: string): Promise<string> {
  if (existsSync(dir)) return dir;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  onCleanUp(() => {
    if (!existsSync(path.join(dir, "seed.json"))) rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Seeding needs a fresh directory: leftovers of an interrupted seed would be mixed into the corpus. */
export function assertEmpty(dir: string): void {
  const entries = readdirSync(dir);
  if (entries.length > 0) {
    throw new Error(
      `${dir} holds no complete corpus (no seed.json) but is not empty: remove it, or pick another`,
    );
  }
}

/**
 * Runs `main` with cleanup on every way out: normal return, error, SIGINT/SIGTERM, and process exit (the last
 * resort, where only synchronous steps can run).
 */
export async function runTool(name: string, main: () => Promise<number>): Promise<void> {
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    process.on(signal, () => {
      process.stderr.write(`\n${name}: ${signal}, cleaning up\n`);
      cleanUp();
      process.exit(code);
    });
  }
  process.on("exit", cleanUp);
  try {
    process.exitCode = await main();
  } catch (error) {
    // inspect, not the stack alone: a validation error's field list is what explains it.
    process.stderr.write(`${name}: ${inspect(error, { depth: 6 })}\n`);
    process.exitCode = 1;
  } finally {
    cleanUp();
  }
}
