import { randomBytes } from "node:crypto";

let lastMs = 0;
let counter = 0;

/**
 * RFC 9562 UUIDv7: 48 bits of Unix milliseconds, then random bits. Time-ordered ids keep new rows at the right
 * edge of the primary-key index instead of scattering writes over it, which is what makes inserts cheap.
 * Within one millisecond a 12-bit counter in `rand_a` (RFC 9562 §6.2, method 1) keeps the ids of this process
 * strictly increasing, so "newest first" by (created_at, id) is creation order.
 */
export function uuidv7(now: number = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = randomBytes(2).readUInt16BE() & 0x3ff;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = 0;
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
