import { createHmac } from "node:crypto";
import { secretKey } from "../crypto/secret-key.js";

const SECRET_PREFIX = "whsec_";

/** A signing key as Standard Webhooks writes secrets: `whsec_` and the key's bytes in base64. */
export function secretText(key: Buffer): string {
  return SECRET_PREFIX + key.toString("base64");
}

// A type alias, not an interface, so that it stands where a record of headers is expected.
export type SignedMessage = {
  readonly "webhook-id": string;
  readonly "webhook-timestamp": string;
  readonly "webhook-signature": string;
};

/**
 * Standard Webhooks headers for one message: HMAC-SHA256 over `${id}.${timestamp}.${body}` under each key, as
 * `v1,<base64>` separated by spaces. More than one key signs while a rotated secret is still honoured, so a
 * receiver holding either the old or the new secret verifies the message.
 */
export function signWebhook(
  message: { id: string; timestamp: Date; body: string },
  keys: readonly Buffer[],
): SignedMessage {
  if (keys.length === 0) throw new Error("no webhook signing key");
  const seconds = Math.floor(message.timestamp.getTime() / 1000).toString();
  const signed = `${message.id}.${seconds}.${message.body}`;
  return {
    "webhook-id": message.id,
    "webhook-timestamp": seconds,
    "webhook-signature": keys
      .map((key) => `v1,${createHmac("sha256", secretKey(key)).update(signed, "utf8").digest("base64")}`)
      .join(" "),
  };
}
