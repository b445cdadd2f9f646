import { createHmac, randomBytes } from "node:crypto";
import { verifyWebhook } from "@tessera/sdk";
import { describe, expect, it } from "vitest";
import { secretText, signWebhook } from "./signing.js";

describe("signWebhook", () => {
  it("matches the Standard Webhooks reference vector", () => {
    // From the Standard Webhooks specification's test suite.
    const key = Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64");
    const headers = signWebhook(
      {
        id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
        timestamp: new Date(1614265330 * 1000),
        body: '{"test": 2432232314}',
      },
      [key],
    );
    expect(headers).toEqual({
      "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "webhook-timestamp": "1614265330",
      "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    });
  });

  it("signs with every key given, each verifiable on its own", async () => {
    const [newer, older] = [randomBytes(32), randomBytes(32)];
    const body = JSON.stringify({ type: "reactor.invocation.completed", data: { n: 1 } });
    const headers = signWebhook({ id: "msg_1", timestamp: new Date(), body }, [newer, older]);
    expect(headers["webhook-signature"].split(" ")).toHaveLength(2);
    for (const key of [newer, older]) {
      await expect(verifyWebhook(body, headers, secretText(key))).resolves.toEqual({
        type: "reactor.invocation.completed",
        data: { n: 1 },
      });
    }
    await expect(verifyWebhook(body, headers, secretText(randomBytes(32)))).rejects.toThrow();
    await expect(verifyWebhook(`${body} `, headers, secretText(newer))).rejects.toThrow();
  });

  it("computes HMAC-SHA256 over id.timestamp.body", () => {
    const key = randomBytes(32);
    const headers = signWebhook({ id: "msg_x", timestamp: new Date(5_000), body: "{}" }, [key]);
    const expected = createHmac("sha256", key).update("msg_x.5.{}").digest("base64");
    expect(headers["webhook-signature"]).toBe(`v1,${expected}`);
  });

  it("refuses to sign without a key", () => {
    expect(() => signWebhook({ id: "m", timestamp: new Date(), body: "{}" }, [])).toThrow();
  });
});
