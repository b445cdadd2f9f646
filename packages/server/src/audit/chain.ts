import { createHmac } from "node:crypto";
import { secretKey } from "../crypto/secret-key.js";
import type { AuditRecord } from "./types.js";

/**
 * The link of one sealed row: HMAC-SHA256, under the tenant's audit key, of the previous row's hash and every
 * column of this row but the hash itself. An HMAC rather than a plain hash: someone who can write to the database
 * but does not hold the master key cannot forge a chain that verifies.
 */
export function linkHash(key: Buffer, previousHash: string, record: AuditRecord, seq: number): string {
  const canonical = JSON.stringify([
    seq,
    record.id,
    record.tenantId,
    record.occurredAt,
    record.actorId,
    record.action,
    record.entityType,
    record.entityId,
    record.rule,
    record.details,
    record.requestId,
  ]);
  return createHmac("sha256", secretKey(key))
    .update(`${previousHash}\n${canonical}`, "utf8")
    .digest("base64url");
}

/** What the first row of a chain follows. */
export const GENESIS = "";
