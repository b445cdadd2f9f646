// Full garbage collections of a Tessera server, read from its standard output (it runs with --trace-gc). The heap
// left after a Mark-Compact is the live set, the figure a JavaScript leak raises; and the time between two of them
// says how long a window must be for a median of RSS samples to cover a whole GC cycle.
import type { ChildProcess } from "node:child_process";

export interface FullGc {
  /** V8's isolate address: the main thread's, or another thread's (Node 20 runs module loader hooks off-thread). */
  readonly isolate: string;
  /** performance.now() of this process when the line arrived: within milliseconds of the collection. */
  readonly atMs: number;
  readonly beforeKiB: number;
  readonly afterKiB: number;
}

// e.g. "[8851:0x193bb490]  3016 ms: Mark-Compact 47.3 (64.3) -> 22.2 (57.7) MB, 64.87 / 0.00 ms …"; V8's MB are MiB.
const MARK_COMPACT =
  /^\[\d+:(0x[0-9a-f]+)\].*Mark-Compact(?: \([a-z ]+\))? ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/;

/** Collects the server's full GCs from now on; its other output still reaches the bench's own listeners. */
export function watchFullGcs(child: ChildProcess): readonly FullGc[] {
  const collections: FullGc[] = [];
  let partial = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const match = MARK_COMPACT.exec(line);
      if (match !== null) {
        collections.push({
          isolate: match[1] ?? "",
          atMs: performance.now(),
          beforeKiB: Math.round(Number(match[2]) * 1024),
          afterKiB: Math.round(Number(match[3]) * 1024),
        });
      }
    }
  });
  return collections;
}

/**
 * The main thread's collections: those of the isolate with the largest heap. The loader-hooks thread's isolate
 * holds a few MiB and would otherwise pass for a full GC that freed the main heap.
 */
export function mainIsolate<T extends FullGc>(collections: readonly T[]): T[] {
  let main: T | undefined;
  for (const gc of collections) if (main === undefined || gc.beforeKiB > main.beforeKiB) main = gc;
  return collections.filter((gc) => gc.isolate === main?.isolate);
}
