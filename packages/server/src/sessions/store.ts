import type { Selectable } from "kysely";
import type { Permission } from "../access/permissions.js";
import type { AccessRule } from "../access/rules.js";
import type { Executor } from "../storage/database.js";
import type { SessionsTable } from "../storage/schema.js";

type Row = Selectable<SessionsTable>;

export interface Session {
  readonly id: string;
  readonly tenantId: string;
  /** The public Application that created it. */
  readonly createdBy: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  /** Set once authorized: by which private Application, and what it granted. */
  readonly authorization: SessionAuthorization | null;
}

export interface SessionAuthorization {
  readonly by: string;
  readonly at: string;
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
}

function fromRow(row: Row): Session {
  const authorized = row.authorized_by !== null && row.authorized_at !== null;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    createdBy: row.created_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    authorization: authorized
      ? {
          by: row.authorized_by as string,
          at: row.authorized_at as string,
          permissions: JSON.parse(row.permissions ?? "[]") as Permission[],
          rules: JSON.parse(row.rules ?? "[]") as AccessRule[],
        }
      : null,
  };
}

/** Every query is scoped by tenant except the key lookup, which is how the tenant is found (as for Applications). */
export function sessionStore(db: Executor) {
  return {
    async insert(session: Session, hashes: { key: string; nonce: string }): Promise<void> {
      await db
        .insertInto("sessions")
        .values({
          id: session.id,
          tenant_id: session.tenantId,
          key_hash: hashes.key,
          nonce_hash: hashes.nonce,
          created_by: session.createdBy,
          created_at: session.createdAt,
          expires_at: session.expiresAt,
          authorized_by: null,
          authorized_at: null,
          permissions: null,
          rules: null,
        })
        .execute();
    },

    /** Unexpired at `now`, or nothing: an expired session is gone from that instant, swept or not. */
    async findByKeyHash(keyHash: string, now: string): Promise<Session | undefined> {
      const row = await db
        .selectFrom("sessions")
        .selectAll()
        .where("key_hash", "=", keyHash)
        .where("expires_at", ">", now)
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /** The tenant's session with this id, unexpired at `now`. */
    async findById(tenantId: string, id: string, now: string): Promise<Session | undefined> {
      const row = await db
        .selectFrom("sessions")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .where("expires_at", ">", now)
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /** The tenant's unexpired, not yet authorized session with this nonce. */
    async findAwaiting(tenantId: string, nonceHash: string, now: string): Promise<Session | undefined> {
      const row = await db
        .selectFrom("sessions")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("nonce_hash", "=", nonceHash)
        .where("authorized_at", "is", null)
        .where("expires_at", ">", now)
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /**
     * Authorizes once: only a session still awaiting authorization and unexpired is changed, so of two
     * authorizations of one nonce racing, exactly one succeeds.
     */
    async authorize(
      tenantId: string,
      id: string,
      authorization: SessionAuthorization,
      expiresAt: string,
      now: string,
    ): Promise<boolean> {
      const result = await db
        .updateTable("sessions")
        .set({
          authorized_by: authorization.by,
          authorized_at: authorization.at,
          permissions: JSON.stringify(authorization.permissions),
          rules: JSON.stringify(authorization.rules),
          expires_at: expiresAt,
        })
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .where("authorized_at", "is", null)
        .where("expires_at", ">", now)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async deleteExpired(now: string): Promise<number> {
      const result = await db.deleteFrom("sessions").where("expires_at", "<=", now).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
