import type { ExpressionBuilder, Selectable } from "kysely";
import type { Executor } from "../storage/database.js";
import type { Database, IdempotencyKeysTable } from "../storage/schema.js";

export type IdempotencyRow = Selectable<IdempotencyKeysTable>;

/** The key of one idempotency record: the caller's key, within its Application, within its tenant. */
export interface KeyScope {
  readonly tenantId: string;
  readonly applicationId: string;
  readonly key: string;
}

export function idempotencyStore(db: Executor) {
  const keyIs = (scope: KeyScope) => (eb: ExpressionBuilder<Database, "idempotency_keys">) =>
    eb.and([
      eb("tenant_id", "=", scope.tenantId),
      eb("application_id", "=", scope.applicationId),
      eb("key", "=", scope.key),
    ]);

  return {
    /** Inserts an in-flight claim; a unique violation means the key is taken. */
    async insert(scope: KeyScope, requestHash: string, createdAt: string, expiresAt: string): Promise<void> {
      await db
        .insertInto("idempotency_keys")
        .values({
          tenant_id: scope.tenantId,
          application_id: scope.applicationId,
          key: scope.key,
          request_hash: requestHash,
          state: "in_flight",
          response_status: null,
          response: null,
          key_version: null,
          created_at: createdAt,
          expires_at: expiresAt,
        })
        .execute();
    },

    async find(scope: KeyScope): Promise<IdempotencyRow | undefined> {
      return db.selectFrom("idempotency_keys").selectAll().where(keyIs(scope)).executeTakeFirst();
    },

    /** Removes the record only if it is still the one that was read (`createdAt`). */
    async remove(scope: KeyScope, createdAt?: string): Promise<void> {
      let query = db.deleteFrom("idempotency_keys").where(keyIs(scope));
      if (createdAt !== undefined) query = query.where("created_at", "=", createdAt);
      await query.execute();
    },

    /** Takes over an abandoned claim, if no one else has meanwhile. */
    async retake(scope: KeyScope, seenCreatedAt: string, createdAt: string): Promise<boolean> {
      const result = await db
        .updateTable("idempotency_keys")
        .set({ created_at: createdAt })
        .where(keyIs(scope))
        .where("state", "=", "in_flight")
        .where("created_at", "=", seenCreatedAt)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async complete(
      scope: KeyScope,
      createdAt: string,
      answer: { status: number; sealed: string; keyVersion: number },
    ): Promise<void> {
      await db
        .updateTable("idempotency_keys")
        .set({
          state: "done",
          response_status: answer.status,
          response: answer.sealed,
          key_version: answer.keyVersion,
        })
        .where(keyIs(scope))
        .where("state", "=", "in_flight")
        .where("created_at", "=", createdAt)
        .execute();
    },

    async deleteExpired(now: string): Promise<number> {
      const result = await db
        .deleteFrom("idempotency_keys")
        .where("expires_at", "<=", now)
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
