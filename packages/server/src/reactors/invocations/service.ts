import type { Principal } from "../../access/principal.js";
import type { ReadContext } from "../../storage/database.js";
import type { Clock } from "../../shared/clock.js";
import { uuidv7 } from "../../crypto/uuid-v7.js";
import { AppError } from "../../server/errors.js";
import type { TenantKeys } from "../../keys/tenant-keys.js";
import { callbackUrlProblem, type CallbackUrlPolicy } from "../../webhooks/callback-url.js";
import type { ReactorInvocation } from "../invoke.js";
import { openJson, sealJson } from "./sealing.js";
import type { InvocationStore } from "./store.js";
import type { DeliveryAttempt, InvocationOutcome, InvocationRecord } from "./types.js";

export interface AsyncReactRequest {
  readonly args?: unknown;
  readonly callbackUrl: string;
  readonly timeoutMs: number;
}

/** An invocation as its requester may see it, outcome opened. */
export interface InvocationView {
  readonly record: InvocationRecord;
  readonly outcome: InvocationOutcome | undefined;
  readonly attempts: readonly DeliveryAttempt[];
}

export interface InvocationServiceDeps {
  readonly store: InvocationStore;
  readonly keys: TenantKeys;
  readonly invocation: Pick<ReactorInvocation, "load" | "detokenize">;
  readonly clock: Clock;
  readonly callbackUrls: CallbackUrlPolicy;
  /** Invocations one tenant may have unsettled (TESSERA_ASYNC_MAX_QUEUED_PER_TENANT). */
  readonly maxQueuedPerTenant: number;
  /** Tells this instance's runner that work is waiting (others find it at their next poll). */
  readonly enqueued: () => void;
}

/**
 * When a tenant at its bound may try again. Its queue drains as runs finish and webhooks settle, which takes
 * seconds to hours; half a minute keeps retrying clients from hammering a bound that will not clear at once.
 */
export const QUEUE_FULL_RETRY_AFTER_S = 30;

export function createInvocationService(deps: InvocationServiceDeps) {
  return {
    /**
     * POST /reactors/{id}/react with a `callback_url` (DESIGN §8). Everything a synchronous call would refuse
     * up front is refused here too, before anything is stored: an unknown reactor, a bad callback URL, tokens
     * that are unknown or not the caller's to use. The arguments are detokenized now, under the caller's rules
     * as they are now, and kept sealed until the run. A tenant holds at most `maxQueuedPerTenant` unsettled
     * invocations: beyond, 429 with Retry-After and nothing stored. The bound is checked before the arguments are
     * detokenized (no token is read for a call that will be refused), and again, exactly, as the row is written.
     */
    async enqueue(
      principal: Principal,
      reactorId: string,
      request: AsyncReactRequest,
      read: ReadContext = {},
    ) {
      const { tenantId } = principal;
      await deps.invocation.load(tenantId, reactorId);
      const problem = await callbackUrlProblem(request.callbackUrl, deps.callbackUrls);
      if (problem !== undefined) throw AppError.validation({ callback_url: [problem] });
      if ((await deps.store.unsettled(tenantId)) >= deps.maxQueuedPerTenant)
        throw queueFull(deps.maxQueuedPerTenant);
      const args = await deps.invocation.detokenize(
        principal,
        request.args,
        { action: "reactor.react_async", reactorId },
        read,
      );

      const now = deps.clock.now();
      const id = uuidv7(now.getTime());
      const key = await deps.keys.current(tenantId, "data");
      const inserted = await deps.store.insert(
        {
          id,
          tenantId,
          reactorId,
          requestedBy: principal.application.id,
          callbackUrl: request.callbackUrl,
          timeoutMs: request.timeoutMs,
          args: sealJson(key, tenantId, id, "args", args),
          keyVersion: key.version,
          createdAt: now.toISOString(),
        },
        deps.maxQueuedPerTenant,
      );
      if (!inserted) throw queueFull(deps.maxQueuedPerTenant);
      deps.enqueued();
      return { id, status: "pending" as const };
    },

    /**
     * GET /reactors/{id}/invocations/{invocation_id}. Only the Application that asked may read an invocation:
     * its outcome derives from data detokenized under that Application's rules, which another Application of
     * the tenant may not be allowed to see. To anyone else it is missing. A session key reads none: it acts as its
     * authorizing Application, whose invocations would show it more than its grant (docs/sessions.md); the outcome
     * of one it started goes to its callback URL.
     */
    async get(principal: Principal, reactorId: string, invocationId: string): Promise<InvocationView> {
      const found = await deps.store.findById(principal.tenantId, invocationId);
      if (
        found === undefined ||
        principal.session !== undefined ||
        found.record.reactorId !== reactorId ||
        found.record.requestedBy !== principal.application.id
      ) {
        throw AppError.notFound(`Invocation ${invocationId}`);
      }
      const { record, attempts } = found;
      const outcome =
        record.outcome === null ? undefined : await openOutcome(deps.keys, record, record.outcome);
      return { record, outcome, attempts };
    },
  };
}

export type InvocationService = ReturnType<typeof createInvocationService>;

function queueFull(max: number): AppError {
  return AppError.rateLimited(
    `The tenant has ${max} asynchronous invocations queued, running or awaiting their webhook; ` +
      `retry after ${QUEUE_FULL_RETRY_AFTER_S} s.`,
    QUEUE_FULL_RETRY_AFTER_S,
  );
}

export async function openOutcome(
  keys: TenantKeys,
  record: InvocationRecord,
  sealed: string,
): Promise<InvocationOutcome> {
  const key = await keys.version(record.tenantId, "data", record.keyVersion);
  return openJson(key, record.tenantId, record.id, "outcome", sealed) as InvocationOutcome;
}
