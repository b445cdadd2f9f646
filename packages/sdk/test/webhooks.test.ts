import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { WebhookVerificationError, verifyWebhook, type HeaderRecord } from "../src/index.js";
import { rejectionOf } from "./rejection.js";

// Signatures here are computed with node:crypto's HMAC, independently of the Web Crypto code under test.
const key = randomBytes(32);
const secret = `whsec_${key.toString("base64")}`;
const payload = JSON.stringify({ type: "reactor.completed", data: { raw: { amount: 42 }, Ünïcode: "✓" } });

function sign(id: string, timestamp: string, body: string | Buffer, signingKey: Buffer = key): string {
  const mac = createHmac("sha256", signingKey).update(`${id}.${timestamp}.`).update(body);
  return `v1,${mac.digest("base64")}`;
}

function now(offsetSeconds = 0): string {
  return String(Math.floor(Date.now() / 1000) + offsetSeconds);
}

function signedHeaders(body: string | Buffer = payload, timestamp = now()): Record<string, string> {
  const id = `msg_${randomBytes(8).toString("hex")}`;
  return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": sign(id, timestamp, body) };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  return (await rejectionOf(promise, WebhookVerificationError)).message;
}

describe("verifyWebhook", () => {
  it("verifies the Standard Webhooks reference vector", async () => {
    // The example message of the Standard Webhooks specification and its libraries' tests.
    const headers = {
      "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "webhook-timestamp": "1614265330",
      "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    };
    const body = '{"test": 2432232314}';
    const referenceSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    expect(
      sign(
        headers["webhook-id"],
        headers["webhook-timestamp"],
        body,
        Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64"),
      ),
    ).toBe(headers["webhook-signature"]);
    expect(await verifyWebhook(body, headers, referenceSecret, { toleranceSeconds: Infinity })).toEqual({
      test: 2432232314,
    });
    // The same message today is far outside the default five minutes.
    expect(await refusal(verifyWebhook(body, headers, referenceSecret))).toMatch(
      /s old, beyond the 300 s tolerance/,
    );
  });

  it("returns the parsed body for a text body, a byte body, a Headers and headers in any case", async () => {
    const headers = signedHeaders();
    const expected = JSON.parse(payload);
    expect(await verifyWebhook(payload, headers, secret)).toEqual(expected);
    expect(await verifyWebhook(Buffer.from(payload), headers, secret)).toEqual(expected);
    expect(await verifyWebhook(new TextEncoder().encode(payload), new Headers(headers), secret)).toEqual(
      expected,
    );
    const shouting = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]),
    );
    expect(await verifyWebhook(payload, shouting, secret)).toEqual(expected);
    const typed = await verifyWebhook<{ type: string }>(payload, headers, secret);
    expect(typed.type).toBe("reactor.completed");
  });

  it("accepts the secret as bare base64, without whsec_", async () => {
    expect(await verifyWebhook(payload, signedHeaders(), key.toString("base64"))).toEqual(
      JSON.parse(payload),
    );
  });

  it("accepts any one matching v1 signature of a space-separated list", async () => {
    const headers = signedHeaders();
    const other = sign(headers["webhook-id"]!, headers["webhook-timestamp"]!, payload, randomBytes(32));
    const list = `v2,ignored ${other} v1,not-base64! ${headers["webhook-signature"]}`;
    expect(await verifyWebhook(payload, { ...headers, "webhook-signature": list }, secret)).toEqual(
      JSON.parse(payload),
    );
    // Node gives a header sent twice as an array.
    const twice: HeaderRecord = { ...headers, "webhook-signature": [other, headers["webhook-signature"]!] };
    expect(await verifyWebhook(payload, twice, secret)).toEqual(JSON.parse(payload));
  });

  it("refuses a tampered body, id or timestamp, and a wrong secret", async () => {
    const headers = signedHeaders();
    const mismatch = /no signature matches/;
    expect(await refusal(verifyWebhook(payload.replace("42", "43"), headers, secret))).toMatch(mismatch);
    expect(await refusal(verifyWebhook(`${payload} `, headers, secret))).toMatch(mismatch);
    expect(await refusal(verifyWebhook(payload, { ...headers, "webhook-id": "msg_other" }, secret))).toMatch(
      mismatch,
    );
    const moved = String(Number(headers["webhook-timestamp"]) - 1);
    expect(await refusal(verifyWebhook(payload, { ...headers, "webhook-timestamp": moved }, secret))).toMatch(
      mismatch,
    );
    const wrongSecret = `whsec_${randomBytes(32).toString("base64")}`;
    expect(await refusal(verifyWebhook(payload, headers, wrongSecret))).toMatch(mismatch);
    const flipped = Buffer.from(headers["webhook-signature"]!.slice(3), "base64");
    flipped[0] = flipped[0]! ^ 1;
    const forged = { ...headers, "webhook-signature": `v1,${flipped.toString("base64")}` };
    expect(await refusal(verifyWebhook(payload, forged, secret))).toMatch(mismatch);
  });

  it("refuses a message older or newer than the tolerance, and honours toleranceSeconds", async () => {
    const old = signedHeaders(payload, now(-301));
    expect(await refusal(verifyWebhook(payload, old, secret))).toMatch(
      /^webhook-timestamp is 30[12] s old, beyond the 300 s tolerance/,
    );
    const ahead = signedHeaders(payload, now(600));
    expect(await refusal(verifyWebhook(payload, ahead, secret))).toMatch(
      /s in the future, beyond the 300 s tolerance/,
    );

    const recent = signedHeaders(payload, now(-240));
    expect(await verifyWebhook(payload, recent, secret)).toEqual(JSON.parse(payload));
    expect(await refusal(verifyWebhook(payload, recent, secret, { toleranceSeconds: 60 }))).toMatch(
      /60 s tolerance/,
    );
    expect(await verifyWebhook(payload, old, secret, { toleranceSeconds: 600 })).toEqual(JSON.parse(payload));
  });

  it("says which header is missing or malformed", async () => {
    const headers = signedHeaders();
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
      const without = Object.fromEntries(Object.entries(headers).filter(([key]) => key !== name));
      expect(await refusal(verifyWebhook(payload, without, secret))).toBe(`the ${name} header is missing`);
      expect(await refusal(verifyWebhook(payload, new Headers(without), secret))).toBe(
        `the ${name} header is missing`,
      );
    }
    expect(await refusal(verifyWebhook(payload, { ...headers, "webhook-timestamp": "1.5e9" }, secret))).toBe(
      "webhook-timestamp must be a Unix time in whole seconds",
    );
    expect(await refusal(verifyWebhook(payload, { ...headers, "webhook-signature": "v2,abc" }, secret))).toBe(
      'webhook-signature holds no "v1,<base64>" signature',
    );
  });

  it("refuses a secret that is not base64, and a signed body that is not JSON", async () => {
    expect(await refusal(verifyWebhook(payload, signedHeaders(), "whsec_not base64!"))).toMatch(
      /secret must be whsec_/,
    );
    expect(await refusal(verifyWebhook(payload, signedHeaders(), "whsec_"))).toMatch(/secret must be whsec_/);
    const text = "not json";
    expect(await refusal(verifyWebhook(text, signedHeaders(text), secret))).toBe(
      "the signed body is not JSON",
    );
  });
});
