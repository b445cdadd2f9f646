import { createCipheriv, createDecipheriv, randomFillSync } from "node:crypto";
import { secretKey } from "./secret-key.js";

const FORMAT_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const IV_POOL_BYTES = IV_BYTES * 512;

let ivPool = Buffer.alloc(0);
let ivOffset = 0;

/**
 * Fresh CSPRNG bytes for each IV, drawn from a pool refilled 512 IVs at a time: one call into OpenSSL per IV
 * costs more than the encryption of a small token. Every pool is a new buffer and no slice of it is handed
 * out twice, so no IV is ever reused.
 */
function freshIv(): Buffer {
  if (ivOffset + IV_BYTES > ivPool.length) {
    ivPool = randomFillSync(Buffer.allocUnsafe(IV_POOL_BYTES));
    ivOffset = 0;
  }
  ivOffset += IV_BYTES;
  return ivPool.subarray(ivOffset - IV_BYTES, ivOffset);
}

/**
 * AES-256-GCM with a fresh random IV per message. The output is self-describing
 * (format version, IV, tag, ciphertext) so that the format can change without a flag day.
 * `aad` binds the ciphertext to where it belongs; decrypting it anywhere else fails.
 */
export function encrypt(key: Buffer, plaintext: Buffer, aad: string): Buffer {
  const iv = freshIv();
  const cipher = createCipheriv("aes-256-gcm", secretKey(key), iv);
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.of(FORMAT_VERSION), iv, cipher.getAuthTag(), body]);
}

export class DecryptionError extends Error {
  constructor() {
    super("ciphertext could not be authenticated");
    this.name = "DecryptionError";
  }
}

export function decrypt(key: Buffer, sealed: Buffer, aad: string): Buffer {
  if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== FORMAT_VERSION) throw new DecryptionError();
  const iv = sealed.subarray(1, 1 + IV_BYTES);
  const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", secretKey(key), iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(tag);
  try {
    const plaintext = decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES));
    // GCM releases nothing at final(); it only checks the tag, and must, before the plaintext is returned.
    decipher.final();
    return plaintext;
  } catch {
    throw new DecryptionError();
  }
}
