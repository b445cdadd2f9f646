import { describe, expect, it } from "vitest";
import { AppError } from "../server/errors.js";
import { createLogger } from "./logging.js";

const CARD = "4111111111111111";
const KEY = "key_prv_Qm9ndXNLZXlGb3JUaGVMb2dnaW5nVGVzdA";

/** A logger at trace level writing into an array, and the lines it wrote, parsed. */
function capture() {
  const lines: string[] = [];
  const log = createLogger("trace", { write: (line) => void lines.push(line) });
  return { log, lines, parsed: () => lines.map((line) => JSON.parse(line) as Record<string, any>) };
}

describe("the server's logger", () => {
  it("logs an error's class, code, status, stack frames and a digest, never its message or fields", () => {
    const { log, lines, parsed } = capture();
    const reactor = new AppError("reactor-error", `declined ${CARD}`, { card: [CARD] }, 402);
    const parser = Object.assign(new Error(`Parse Error: Invalid header value char`), {
      code: "HPE_INVALID_HEADER_TOKEN",
      rawPacket: Buffer.from(`GET / HTTP/1.1\r\nSVC-API-KEY: ${KEY}\r\n`),
      reason: `Invalid header value char in ${CARD}`,
    });
    const postgres = Object.assign(new Error("duplicate key value violates unique constraint"), {
      code: "23505",
      detail: `Key (id)=(${CARD}) already exists.`,
      table: "tokens",
      constraint: "tokens_pkey",
      where: `value ${CARD}`,
    });
    const wrapped = new Error(`could not tokenize ${CARD}`, { cause: new TypeError(`bad ${CARD}`) });
    log.error({ err: reactor }, "request failed");
    log.trace({ err: parser }, "client error");
    log.error({ err: postgres }, "request failed");
    log.error({ err: wrapped }, "request failed");
    log.error({ err: { card: CARD } }, "a thrown object");
    log.error({ err: `declined ${CARD}` }, "a thrown string");

    expect(lines.join("\n")).not.toContain(CARD);
    expect(lines.join("\n")).not.toContain(KEY);
    const [first, second, third, fourth, fifth, sixth] = parsed();
    expect(first!.err).toEqual({
      type: "AppError",
      code: "reactor-error",
      status: 402,
      digest: expect.stringMatching(/^[\w-]{16}$/),
      stack: expect.stringMatching(/^\s+at /),
    });
    expect(second!.err).toMatchObject({ type: "Error", code: "HPE_INVALID_HEADER_TOKEN" });
    expect(second!.err.rawPacket).toBeUndefined();
    expect(third!.err).toMatchObject({ code: "23505", table: "tokens", constraint: "tokens_pkey" });
    expect(fourth!.err).toMatchObject({ type: "Error", cause: { type: "TypeError" } });
    expect(fifth!.err).toEqual({ type: "object", digest: expect.any(String) });
    expect(sixth!.err).toEqual({ type: "string", digest: expect.any(String) });
  });

  it("gives equal messages equal digests within one logger, and different ones otherwise", () => {
    const { log, parsed } = capture();
    log.error({ err: new Error(`declined ${CARD}`) }, "x");
    log.error({ err: new Error(`declined ${CARD}`) }, "x");
    log.error({ err: new Error("declined 4242424242424242") }, "x");
    const [a, b, c] = parsed().map((line) => line.err.digest as string);
    expect(a).toBe(b);
    expect(c).not.toBe(a);
    // Another process (another logger) keys its digests differently: a digest cannot be tested against guesses
    // by anyone who does not hold the running process's memory.
    const other = capture();
    other.log.error({ err: new Error(`declined ${CARD}`) }, "x");
    expect(other.parsed()[0]!.err.digest).not.toBe(a);
  });

  it("puts the error's class, not its message, on a line logged without a message", () => {
    const { log, lines, parsed } = capture();
    log.error(new RangeError(`declined ${CARD}`));
    log.warn({ err: new Error(`declined ${CARD}`) });
    log.child({ reqId: "r" }).error(new TypeError(CARD));
    expect(lines.join("\n")).not.toContain(CARD);
    expect(parsed().map((line) => line.msg)).toEqual(["RangeError", "Error", "TypeError"]);
  });

  it("logs a request by its route's pattern, without its query, host or headers", () => {
    const { log, lines, parsed } = capture();
    const request = {
      method: "GET",
      url: `/tokens/${CARD}?key=${KEY}`,
      routeOptions: { url: "/tokens/:id" },
      ip: "127.0.0.1",
      host: `${CARD}.example`,
      headers: { "svc-api-key": KEY, authorization: `Bearer ${KEY}`, "x-card": CARD },
      socket: { remotePort: 40_000 },
    };
    log.info({ req: request }, "incoming request");
    log.info({ req: { ...request, routeOptions: {} } }, "incoming request");
    log.info(`Route GET:/tokens?key=${KEY}&card=${CARD} not found`);
    log.info({ headers: request.headers, query: { key: KEY }, data: CARD }, "an object logged by mistake");
    expect(lines.join("\n")).not.toContain(CARD);
    expect(lines.join("\n")).not.toContain(KEY);
    const [matched, unmatched, message, mistaken] = parsed();
    expect(matched!.req).toEqual({
      method: "GET",
      url: "/tokens/:id",
      remoteAddress: "127.0.0.1",
      remotePort: 40_000,
    });
    expect(unmatched!.req.url).toBe("unmatched");
    expect(message!.msg).toBe("Route GET:/tokens?[redacted] not found");
    expect(mistaken).toMatchObject({ headers: "[redacted]", query: "[redacted]", data: "[redacted]" });
  });
});
