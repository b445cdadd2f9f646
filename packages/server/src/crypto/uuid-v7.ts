import { randomUUID } from "node:crypto";

let lastMs = 0;
let counter = 0;

/**
 * RFC 9562 UUIDv7: 48 bits of Unix milliseconds, then random bits. Time-ordered ids keep new rows at the right
 * edge of the primary-key index instead of scattering writes over it, which is what makes inserts cheap.
 * Within one millisecond a 12-bit counter in `rand_a` (RFC 9562 §6.2, method 1) keeps the ids of this process
 * strictly increasing, so "newest first" by (created_at, id) is creation order. The random tail (variant bits
 * included) comes from `randomUUID`, which draws from a pre-filled entropy cache: this runs on every create.
 */
export function uuidv7(now: number = Date.now()): string {
  const random = randomUUID();
  if (now > lastMs) {
    lastMs = now;
    counter = parseInt(random.slice(15, 18), 16) & 0x3ff;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = 0;
  }
  const time = lastMs.toString(16).padStart(12, "0");
  return `${time.slice(0, 8)}-${time.slice(8)}-7${counter.toString(16).padStart(3, "0")}${random.slice(18)}`;
}
