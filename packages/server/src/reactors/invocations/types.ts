import type { ProblemDetails } from "../../server/errors.js";

export type InvocationStatus = "pending" | "running" | "completed" | "failed";
export type DeliveryStatus = "pending" | "delivered" | "failed";

/** How a run ended, as it is sealed, delivered and shown. */
export type InvocationOutcome =
  | { readonly status: "completed"; readonly result: { raw?: unknown; tokens?: unknown } }
  /** The reactor chose the whole HTTP answer (CustomHttpResponseError, wire-format §7). */
  | {
      readonly status: "completed" | "failed";
      readonly response: { status: number; headers: Record<string, string>; body: unknown };
    }
  | { readonly status: "failed"; readonly error: ProblemDetails };

/** An invocation as stored, its sealed columns left sealed. */
export interface InvocationRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly reactorId: string;
  readonly requestedBy: string;
  readonly callbackUrl: string;
  /** The callback URL's scheme, host and port: where fairness counts its webhook (docs/reactors.md#fairness). */
  readonly destination: string;
  readonly timeoutMs: number;
  readonly status: InvocationStatus;
  readonly runAttempts: number;
  readonly runAfter: string;
  readonly keyVersion: number;
  readonly args: string | null;
  readonly outcome: string | null;
  readonly deliveryStatus: DeliveryStatus | null;
  readonly deliveryAttempts: number;
  readonly deliverAfter: string | null;
  readonly createdAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly deliveredAt: string | null;
}

export interface DeliveryAttempt {
  readonly attempt: number;
  readonly attemptedAt: string;
  readonly durationMs: number;
  readonly responseStatus: number | null;
  readonly error: string | null;
}
