import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { addressesOf, urlHost } from "../../test/special-ranges.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../test/webhook-receiver.js";
import { IPV4_SPECIAL_RANGES, IPV6_SPECIAL_RANGES } from "../net/special-ranges.js";
import { callbackUrlProblem } from "./callback-url.js";
import { postWebhook, type PostOptions } from "./post.js";

const BODY = JSON.stringify({ type: "invocation.completed", data: { id: "inv_1" } });
const HEADERS = { "webhook-id": "msg_inv_1" };
const GUARDED: PostOptions = { timeoutMs: 5_000, allowPrivate: false };
const OPEN: PostOptions = { timeoutMs: 5_000, allowPrivate: true };

/**
 * Every refusal below is aimed at a receiver that is really listening on 127.0.0.1 (the control at the end proves
 * it answers), so an empty `received` means the guard stopped the request, not that nobody was there.
 */
describe("postWebhook's check of the address it sends to", () => {
  let receiver: WebhookReceiver;
  /** The receiver's URL with its host written as the literal 127.0.0.1. */
  let literal: string;
  /** The same URL with a host name that resolves to loopback. */
  let named: string;

  beforeEach(async () => {
    receiver = await startWebhookReceiver();
    literal = `${receiver.url}/hook`;
    const url = new URL(literal);
    url.hostname = "localhost";
    named = url.toString();
  });
  afterEach(() => receiver.close());

  it("refuses a loopback address written in the URL and sends nothing", async () => {
    expect(await postWebhook(literal, BODY, HEADERS, GUARDED)).toEqual({
      ok: false,
      error: "127.0.0.1 resolves to 127.0.0.1, which is not a public address",
    });
    expect(receiver.received).toEqual([]);
  });

  it("refuses a name that resolves to loopback when sent, though it passed as public when accepted (DNS rebinding)", async () => {
    // When the invocation was accepted, DNS answered with a public address.
    const then = { allowPrivate: false, resolve: () => Promise.resolve(["93.184.216.34"]) };
    expect(await callbackUrlProblem(named, then)).toBeUndefined();
    // Now the real resolver answers loopback (127.0.0.1, or ::1 first where /etc/hosts lists it first).
    expect(await postWebhook(named, BODY, HEADERS, GUARDED)).toEqual({
      ok: false,
      error: expect.stringMatching(
        /^localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/,
      ),
    });
    expect(receiver.received).toEqual([]);
  });

  it("refuses an address in every special-purpose range when it is sent, before connecting", async () => {
    // Refused before any socket is opened: the test sends nothing to these ranges.
    for (const range of [...IPV4_SPECIAL_RANGES, ...IPV6_SPECIAL_RANGES]) {
      const { inside } = addressesOf(range);
      expect(await postWebhook(`http://${urlHost(inside)}/hook`, BODY, HEADERS, GUARDED), range.cidr).toEqual(
        {
          ok: false,
          error: expect.stringMatching(/^\S+ resolves to \S+, which is not a public address$/),
        },
      );
    }
  });

  it.each([
    ["the literal address", () => literal],
    ["the name", () => named],
  ])("sends to %s once private targets are allowed", async (_, target) => {
    expect(await postWebhook(target(), BODY, HEADERS, OPEN)).toEqual({ ok: true, status: 200 });
    expect(receiver.received).toEqual([expect.objectContaining({ path: "/hook", raw: BODY })]);
    expect(receiver.received[0]!.headers).toMatchObject(HEADERS);
  });
});
