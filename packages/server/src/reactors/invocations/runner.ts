import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import { startWorkLoop, type WorkLoop } from "../../jobs/work-loop.js";
import { AppError, toProblem } from "../../server/errors.js";
import { storeOutage } from "../../storage/availability.js";
import type { TenantKeys } from "../../keys/tenant-keys.js";
import type { ReactAnswer, ReactorInvocation } from "../invoke.js";
import { openJson, sealJson } from "./sealing.js";
import type { InvocationStore } from "./store.js";
import type { InvocationOutcome, InvocationRecord } from "./types.js";

/** After this many starts that never finished (instances that died mid-run), an invocation fails. */
export const MAX_RUN_ATTEMPTS = 3;
/** Beyond its own timeout, how long a run's lease lasts: time to start a worker and write the outcome. */
const RUN_LEASE_MARGIN_MS = 15_000;
/** When every reactor worker is busy, how long before the run is tried again. */
const BUSY_RETRY_MS = 1_000;

export interface RunnerDeps {
  readonly store: InvocationStore;
  readonly keys: TenantKeys;
  readonly invocation: Pick<ReactorInvocation, "load" | "execute">;
  readonly clock: Clock;
  /** Identifies this instance in the claims it makes. */
  readonly owner: string;
  readonly concurrency: number;
  readonly pollMs: number;
  /** A run has ended and its webhook is due. */
  readonly finished: () => void;
  readonly log: Pick<Logger, "error" | "warn">;
}

/** Runs the asynchronous invocations that are due, on this instance's reactor workers. */
export function startInvocationRunner(deps: RunnerDeps): WorkLoop {
  let stopping = false;

  const at = (offsetMs: number) => new Date(deps.clock.now().getTime() + offsetMs).toISOString();

  async function outcomeOf(record: InvocationRecord): Promise<InvocationOutcome | "busy"> {
    if (record.runAttempts > MAX_RUN_ATTEMPTS) {
      return failed(
        new AppError(
          "reactor-failed",
          `The invocation was interrupted ${MAX_RUN_ATTEMPTS} times (the instances running it stopped).`,
        ),
      );
    }
    try {
      const reactor = await deps.invocation.load(record.tenantId, record.reactorId);
      const key = await deps.keys.version(record.tenantId, "data", record.keyVersion);
      const args = openJson(key, record.tenantId, record.id, "args", record.args ?? "");
      return completed(
        await deps.invocation.execute(record.tenantId, record.requestedBy, reactor, args, record.timeoutMs),
      );
    } catch (error) {
      if (error instanceof AppError && error.code === "unavailable") return "busy";
      if (error instanceof AppError) return failed(error);
      throw error;
    }
  }

  async function run(record: InvocationRecord): Promise<void> {
    let outcome: InvocationOutcome | "busy";
    try {
      outcome = await outcomeOf(record);
    } catch (err) {
      // The store went away mid-run (loading the reactor or its key): the invocation is not at fault, and is
      // given back as when the workers are busy. If giving it back fails too, its lease runs out and it is
      // claimed again.
      if (storeOutage(err) !== undefined) outcome = "busy";
      else {
        deps.log.error({ err, invocation: record.id }, "asynchronous invocation failed unexpectedly");
        outcome = failed(new AppError("internal", "The invocation failed inside Tessera."));
      }
    }
    // Stopping kills the workers: what they were running is given back for a restart or another instance,
    // not reported as the reactor's failure.
    if (outcome === "busy" || stopping) {
      await deps.store.releaseRun(record, deps.owner, at(stopping ? 0 : BUSY_RETRY_MS));
      return;
    }
    const key = await deps.keys.current(record.tenantId, "data");
    const written = await deps.store.finishRun(record, deps.owner, {
      status: outcome.status,
      outcome: sealJson(key, record.tenantId, record.id, "outcome", outcome),
      keyVersion: key.version,
      finishedAt: at(0),
    });
    if (written) deps.finished();
    else deps.log.warn({ invocation: record.id }, "an invocation's lease ran out before it finished");
  }

  const loop = startWorkLoop({
    name: "reactor invocations",
    pollMs: deps.pollMs,
    concurrency: deps.concurrency,
    claim: () =>
      deps.store.claimRun({
        owner: deps.owner,
        now: at(0),
        leaseUntil: (record) => at(record.timeoutMs + RUN_LEASE_MARGIN_MS),
      }),
    run,
    log: deps.log,
  });
  return {
    wake: () => loop.wake(),
    stop: () => {
      stopping = true;
      return loop.stop();
    },
  };
}

function completed(answer: ReactAnswer): InvocationOutcome {
  if (answer.kind === "result") return { status: "completed", result: answer.body };
  const { status, headers, body } = answer;
  return { status: status < 400 ? "completed" : "failed", response: { status, headers, body } };
}

function failed(error: AppError): InvocationOutcome {
  return { status: "failed", error: toProblem(error, undefined) };
}
