import { createHash, hkdfSync } from "node:crypto";
import { decrypt, DecryptionError, encrypt } from "../crypto/cipher.js";
import type { Keyset } from "./compile.js";

/** A `start` cursor that this server did not issue for this tenant, Application and query. */
export class CursorError extends Error {
  constructor() {
    super("is not a cursor this API returned for this query; start again without it");
    this.name = "CursorError";
  }
}

/** What a cursor is good for: the walk it was issued in. Any difference makes it unreadable. */
export interface CursorBinding {
  readonly tenantId: string;
  readonly applicationId: string;
  /** The session walking, when a session key asks: its cursors are its own, not its Application's. */
  readonly sessionId: string | undefined;
  /** Which walk (`list` or `search`) and its filters or query, as canonical text. */
  readonly walk: string;
}

const VERSION = "v1";

const cursorKeys = new WeakMap<Buffer, Buffer>();

/**
 * The cursor key: derived from the tenant's index key (never rotated, so a walk outlives any rotation), under a
 * label of its own, so that no ciphertext or HMAC made for one purpose is valid for the other. Derived once per key
 * buffer (a cached tenant key) and kept as long as it: every v2 page needs it, an HKDF costs ~20 µs of CPU on
 * Node.js 24, and a key buffer made afresh per request would also miss the cipher's KeyObject (crypto/secret-key.ts).
 */
function cursorKey(indexKey: Buffer): Buffer {
  let key = cursorKeys.get(indexKey);
  if (key === undefined) {
    key = Buffer.from(hkdfSync("sha256", indexKey, Buffer.alloc(0), `tessera:cursor:${VERSION}`, 32));
    cursorKeys.set(indexKey, key);
  }
  return key;
}

/**
 * The AAD: tenant, Application (and session) and a hash of the walk, so that a cursor opens only in the walk it
 * came from. Ids are UUIDs, so `/` cannot make one caller's text another's.
 */
function aadOf(binding: CursorBinding): string {
  const walk = createHash("sha256").update(binding.walk).digest("base64url");
  const caller =
    binding.sessionId === undefined ? binding.applicationId : `${binding.applicationId}/${binding.sessionId}`;
  return `tessera:cursor:${VERSION}:${binding.tenantId}:${caller}:${walk}`;
}

/**
 * Cursors of the keyset walks (wire-format §3): the place after which the next page starts, sealed with AES-GCM
 * under a key of the tenant. Opaque to the caller (the place is not readable), and authenticated: a cursor that
 * was altered, made up, or issued to another tenant, Application or query fails to open, and is a 400.
 */
export function createCursors(indexKey: Buffer) {
  const key = cursorKey(indexKey);
  return {
    seal(place: Keyset, binding: CursorBinding): string {
      const plaintext = Buffer.from(JSON.stringify([place.createdAt, place.id]), "utf8");
      return encrypt(key, plaintext, aadOf(binding)).toString("base64url");
    },

    open(cursor: string, binding: CursorBinding): Keyset {
      try {
        const [createdAt, id] = JSON.parse(
          decrypt(key, Buffer.from(cursor, "base64url"), aadOf(binding)).toString("utf8"),
        ) as unknown[];
        // Only this module seals cursors; a well-authenticated one of another shape is a bug, not a bad request.
        if (typeof createdAt !== "string" || typeof id !== "string") throw new Error("malformed cursor");
        return { createdAt, id };
      } catch (error) {
        if (error instanceof DecryptionError) throw new CursorError();
        throw error;
      }
    },
  };
}
