import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import { startWorkLoop, type WorkLoop } from "../../jobs/work-loop.js";
import type { TenantKeys } from "../../keys/tenant-keys.js";
import { nextAttemptDelay, type RetryPolicy } from "../../webhooks/backoff.js";
import { postWebhook, type PostResult } from "../../webhooks/post.js";
import { signWebhook } from "../../webhooks/signing.js";
import { webhookBody } from "./present.js";
import { openOutcome } from "./service.js";
import type { DeliveryResult, InvocationStore } from "./store.js";
import type { InvocationRecord } from "./types.js";

/** Beyond the request timeout, how long a delivery's lease lasts. */
const DELIVERY_LEASE_MARGIN_MS = 10_000;

export interface DelivererDeps {
  readonly store: InvocationStore;
  readonly keys: TenantKeys;
  readonly signingKeys: (tenantId: string) => Promise<Buffer[]>;
  readonly clock: Clock;
  readonly owner: string;
  readonly concurrency: number;
  /** Attempts in flight to one destination (scheme, host, port), over every instance on the store. */
  readonly perDestination: number;
  readonly pollMs: number;
  readonly requestTimeoutMs: number;
  readonly allowPrivate: boolean;
  readonly retry: RetryPolicy;
  readonly log: Pick<Logger, "error" | "warn">;
}

/** Answers that say the receiver is down or overloaded, rather than refusing this one message. */
const DOWN_STATUSES = new Set([429, 502, 503, 504]);
/** Standard Webhooks: the receiver says the endpoint is gone for good; retrying would not change that. */
const GONE = 410;

/**
 * Sends the webhooks of finished invocations, one attempt per claim, and schedules the next attempt after a
 * failure until the retry window closes (410 Gone ends the retries at once). An attempt that may have reached the
 * receiver but was not recorded (the instance died) is sent again: delivery is at least once, and `webhook-id`
 * lets receivers drop repeats. Claims are fair (store.ts `claimDelivery`): at most `perDestination` attempts in
 * flight to one destination, a destination that does not answer paused with a backoff of its own, and the tenant
 * with the fewest deliveries in flight served first, so a slow or dead receiver delays only its own webhooks.
 */
export function startWebhookDeliverer(deps: DelivererDeps): WorkLoop {
  const now = () => deps.clock.now();
  const at = (offsetMs: number) => new Date(now().getTime() + offsetMs).toISOString();

  async function deliver(record: InvocationRecord): Promise<void> {
    const outcome = await openOutcome(deps.keys, record, record.outcome ?? "");
    const body = webhookBody(record, outcome);
    const startedAt = now();
    const started = performance.now();
    const headers = signWebhook(
      { id: `msg_${record.id}`, timestamp: startedAt, body },
      await deps.signingKeys(record.tenantId),
    );
    const result = await postWebhook(record.callbackUrl, body, headers, {
      timeoutMs: deps.requestTimeoutMs,
      allowPrivate: deps.allowPrivate,
    });
    const attempt = {
      attempt: record.deliveryAttempts,
      attemptedAt: startedAt.toISOString(),
      durationMs: Math.round(performance.now() - started),
      responseStatus: "status" in result ? result.status : null,
      error: "error" in result ? result.error : null,
    };
    let next: DeliveryResult["next"] = { status: "delivered" };
    if (!result.ok) {
      const elapsed = now().getTime() - new Date(record.finishedAt ?? record.createdAt).getTime();
      const delay =
        "status" in result && result.status === GONE
          ? undefined
          : nextAttemptDelay(record.deliveryAttempts, elapsed, deps.retry);
      next = delay === undefined ? { status: "failed" } : { status: "pending", after: at(delay) };
    }
    const destination: DeliveryResult["destination"] = isDown(result)
      ? {
          up: false,
          pausedUntil: (failures) => at(nextAttemptDelay(failures, 0, deps.retry) ?? deps.retry.capMs),
        }
      : { up: true };
    if (!(await deps.store.recordDelivery(record, deps.owner, { attempt, next, destination }))) {
      deps.log.warn({ invocation: record.id }, "a webhook delivery's lease ran out before it was recorded");
    }
  }

  return startWorkLoop({
    name: "webhook deliveries",
    pollMs: deps.pollMs,
    concurrency: deps.concurrency,
    claim: () =>
      deps.store.claimDelivery({
        owner: deps.owner,
        perDestination: deps.perDestination,
        now: now().toISOString(),
        leaseUntil: () =>
          new Date(now().getTime() + deps.requestTimeoutMs + DELIVERY_LEASE_MARGIN_MS).toISOString(),
      }),
    run: deliver,
    log: deps.log,
  });
}

/** No answer at all (a timeout, a refused or reset connection, an address refused), or one that says "later". */
function isDown(result: PostResult): boolean {
  return !("status" in result) || DOWN_STATUSES.has(result.status);
}
