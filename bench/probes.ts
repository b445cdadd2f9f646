// Measurements that are not a request repeated under load (the scenarios' autocannon runs): timed one-off calls
// and readings of the server's processes. They run after the scenarios, on the same server.
import type { ScenarioContext } from "./api.js";

/** A running Tessera server the probe may call and look at. */
export interface TesseraHandle {
  readonly context: ScenarioContext;
  /** The server's process id: its reactor workers descend from it. */
  readonly pid: number;
}

export interface ProbeContext {
  /** The server the scenarios ran on. */
  readonly tessera: TesseraHandle;
  /** How many fresh reactors each cold-start case times. */
  readonly coldStarts: number;
  /** Starts another server, on a fresh store, with these settings added; stopped with `stop` or at exit. */
  startTessera(env: Readonly<Record<string, string>>): Promise<TesseraHandle & { stop(): Promise<void> }>;
  readonly progress: (message: string) => void;
}

export interface ProbeReport {
  readonly name: string;
  readonly kind: string;
  /** Why the probe failed its target or could not be trusted; empty when it passed. */
  readonly failures: readonly string[];
  readonly pass: boolean;
  /** Printed under the scenarios' table. */
  readonly table: string;
  /** Written to results.json. */
  readonly figures: Readonly<Record<string, unknown>>;
}

export interface Probe {
  readonly name: string;
  run(context: ProbeContext): Promise<ProbeReport>;
}
