/**
 * The NDJSON protocol between the host and a reactor worker (harness.js). The host sends a nonce, then frames;
 * every frame the worker sends carries the nonce in `n`. A line without it is something reactor code printed
 * on its own and is discarded.
 */

/** A value thrown by reactor code, reduced to data by the harness. */
export interface ThrownByReactor {
  readonly name: string;
  readonly message: string;
  readonly status?: unknown;
  readonly errors?: unknown;
  readonly headers?: unknown;
  readonly body?: unknown;
}

export type WorkerFrame =
  /** The harness has started (Deno's Node compatibility layer included) and waits for code. */
  | { t: "ready" }
  | { t: "loaded" }
  | { t: "load-error"; error: ThrownByReactor }
  | { t: "log"; invocation: number; level: string; text: string }
  | { t: "rpc"; invocation: number; call: number; method: string; params: unknown[] }
  | { t: "result"; invocation: number; ok: true; value: { raw?: unknown; tokenize?: unknown } }
  | { t: "result"; invocation: number; ok: false; error: ThrownByReactor };

export type HostFrame =
  | {
      t: "load";
      code: string;
      modules: readonly string[];
      /** The npm packages among `modules`: name → the `npm:` specifier to import. */
      packages: Readonly<Record<string, string>>;
    }
  | { t: "invoke"; invocation: number; args: unknown; configuration: Record<string, string>; svc: boolean }
  | { t: "rpc-result"; call: number; ok: true; value: unknown }
  | {
      t: "rpc-result";
      call: number;
      ok: false;
      error: { message: string; status?: number; errors?: unknown };
    };

const KINDS = new Set(["ready", "loaded", "load-error", "log", "rpc", "result"]);

/** The frame on `line`, or undefined when the line is not one (no nonce, not JSON, unknown kind). */
export function parseFrame(line: string, nonce: string): WorkerFrame | undefined {
  // Cheap refusal first: reactor code may print a great deal.
  if (!line.includes(nonce)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const frame = parsed as { n?: unknown; t?: unknown };
  if (frame.n !== nonce || typeof frame.t !== "string" || !KINDS.has(frame.t)) return undefined;
  return parsed as WorkerFrame;
}
