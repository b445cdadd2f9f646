import type { InvocationView } from "./service.js";
import type { InvocationOutcome, InvocationRecord } from "./types.js";

/** The outcome's own member: `result`, `response` (a reactor's custom HTTP answer) or `error` (problem details). */
function outcomeFields(outcome: InvocationOutcome | undefined) {
  if (outcome === undefined) return {};
  if ("result" in outcome) return { result: outcome.result };
  if ("response" in outcome) return { response: outcome.response };
  return { error: outcome.error };
}

function common(record: InvocationRecord) {
  return {
    id: record.id,
    reactor_id: record.reactorId,
    status: record.status,
    created_at: record.createdAt,
    ...(record.startedAt !== null && { started_at: record.startedAt }),
    ...(record.finishedAt !== null && { finished_at: record.finishedAt }),
  };
}

/** GET /reactors/{id}/invocations/{invocation_id}; camelCase inside, snake_case here. */
export function presentInvocation({ record, outcome, attempts }: InvocationView) {
  return {
    ...common(record),
    callback_url: record.callbackUrl,
    timeout_ms: record.timeoutMs,
    run_attempts: record.runAttempts,
    ...outcomeFields(outcome),
    ...(record.deliveryStatus !== null && {
      delivery: {
        status: record.deliveryStatus,
        attempts: attempts.map((a) => ({
          attempt: a.attempt,
          attempted_at: a.attemptedAt,
          duration_ms: a.durationMs,
          ...(a.responseStatus !== null && { response_status: a.responseStatus }),
          ...(a.error !== null && { error: a.error }),
        })),
        ...(record.deliveryStatus === "pending" &&
          record.deliverAfter !== null && { next_attempt_at: record.deliverAfter }),
        ...(record.deliveredAt !== null && { delivered_at: record.deliveredAt }),
      },
    }),
  };
}

/**
 * The webhook's body, after Standard Webhooks' recommended envelope (`type`, `timestamp`, `data`). The same
 * text is sent on every attempt; only the signature headers change with the time of sending.
 */
export function webhookBody(record: InvocationRecord, outcome: InvocationOutcome): string {
  return JSON.stringify({
    type: `reactor.invocation.${outcome.status}`,
    timestamp: record.finishedAt,
    data: { ...common({ ...record, status: outcome.status }), ...outcomeFields(outcome) },
  });
}
