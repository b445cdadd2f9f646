import { createHash } from "node:crypto";
import type { Principal } from "../access/principal.js";
import type { Clock } from "../shared/clock.js";
import { decrypt, encrypt } from "../crypto/cipher.js";
import { AppError } from "../server/errors.js";
import { isUniqueViolation, type Executor } from "../storage/database.js";
import type { TenantKeys } from "../keys/tenant-keys.js";
import { idempotencyStore, type KeyScope } from "./store.js";

/** How long a key and its answer are kept (DESIGN: 24 h, as Stripe and Basis Theory do). */
export const KEY_LIFETIME_MS = 24 * 60 * 60_000;
/**
 * A claim whose request never finished (its instance died) is taken over after this: longer than any request
 * takes (a synchronous reactor runs at most 210 s), so a slow request is not mistaken for a dead one.
 */
export const ABANDONED_AFTER_MS = 5 * 60_000;

export const MAX_KEY_LENGTH = 255;

/** An answer as it is kept and replayed. */
export interface StoredAnswer {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: string;
}

export type Claim =
  | { readonly kind: "claimed"; readonly scope: KeyScope; readonly createdAt: string }
  | { readonly kind: "replay"; readonly answer: StoredAnswer };

/** What a request is, for telling a repeat from a different request under the same key. */
export function requestHash(method: string, route: string, params: unknown, body: unknown): string {
  return createHash("sha256")
    .update(canonicalJson([method, route, params ?? null, body ?? null]))
    .digest("base64url");
}

/** JSON with object keys sorted, so that the same body sent with its keys in another order is the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, inner]) => inner !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The AAD binds a kept answer to its key: copied to another key's row, it does not decrypt. */
function aad(scope: KeyScope): string {
  return `tessera:idempotency:v1:${scope.tenantId}:${scope.applicationId}:${scope.key}`;
}

export function createIdempotency(deps: { db: Executor; keys: TenantKeys; clock: Clock }) {
  const store = idempotencyStore(deps.db);
  const at = (offsetMs = 0) => new Date(deps.clock.now().getTime() + offsetMs).toISOString();

  async function replay(scope: KeyScope, row: { response: string | null; key_version: number | null }) {
    const key = await deps.keys.version(scope.tenantId, "data", Number(row.key_version));
    const plaintext = decrypt(key, Buffer.from(row.response ?? "", "base64"), aad(scope));
    return JSON.parse(plaintext.toString("utf8")) as StoredAnswer;
  }

  return {
    /**
     * The first request with a key claims it. A repeat of the same request gets the answer kept for it; the
     * same key with another request, or while the first is still running, is a 409.
     */
    async claim(principal: Principal, key: string, hash: string): Promise<Claim> {
      // A session's keys are its own: it acts as its authorizing Application, but must never be handed an
      // answer kept for that Application (or for another session), which may show more than the session may see.
      const holder = principal.session?.id ?? principal.application.id;
      const scope = { tenantId: principal.tenantId, applicationId: holder, key };
      for (let attempt = 0; attempt < 3; attempt++) {
        const createdAt = at();
        try {
          await store.insert(scope, hash, createdAt, at(KEY_LIFETIME_MS));
          return { kind: "claimed", scope, createdAt };
        } catch (error) {
          if (!isUniqueViolation(error)) throw error;
        }
        const row = await store.find(scope);
        if (row === undefined) continue;
        if (row.expires_at <= createdAt) {
          await store.remove(scope, row.created_at);
          continue;
        }
        if (row.request_hash !== hash) {
          throw new AppError(
            "conflict",
            "This idempotency key was used for a different request; use a new key for a new request.",
          );
        }
        if (row.state === "done") return { kind: "replay", answer: await replay(scope, row) };
        if (
          row.created_at <= at(-ABANDONED_AFTER_MS) &&
          (await store.retake(scope, row.created_at, createdAt))
        ) {
          return { kind: "claimed", scope, createdAt };
        }
        throw new AppError(
          "conflict",
          "A request with this idempotency key is still in progress; retry once it has finished.",
        );
      }
      throw new AppError(
        "conflict",
        "This idempotency key is being claimed concurrently; retry the request.",
      );
    },

    /** Keeps the answer of a claimed request, sealed under the tenant's data key. */
    async complete(claim: Extract<Claim, { kind: "claimed" }>, answer: StoredAnswer): Promise<void> {
      const key = await deps.keys.current(claim.scope.tenantId, "data");
      const sealed = encrypt(key.key, Buffer.from(JSON.stringify(answer), "utf8"), aad(claim.scope));
      await store.complete(claim.scope, claim.createdAt, {
        status: answer.status,
        sealed: sealed.toString("base64"),
        keyVersion: key.version,
      });
    },

    /** Frees the key of a request that failed on the server's side, so that it can be sent again. */
    async release(claim: Extract<Claim, { kind: "claimed" }>): Promise<void> {
      await store.remove(claim.scope, claim.createdAt);
    },

    sweepExpired(): Promise<number> {
      return store.deleteExpired(at());
    },
  };
}

export type Idempotency = ReturnType<typeof createIdempotency>;
