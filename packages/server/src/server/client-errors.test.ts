import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";

/** Planted in every bad request: none may come back in an answer or reach a log line. */
const KEY = "key_prod_planted0123456789";
const CARD = "4111111111111111";

interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly text: string;
  readonly body: any;
}

describe.skipIf(STORE_UNAVAILABLE)("requests Node's HTTP parser refuses", () => {
  let server: TestServer;
  const logs: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({}, { logSink: (line) => logs.push(line) });
  });
  afterAll(() => server?.close());

  /** Writes the bytes on a connection of its own and reads what comes back until the server closes it. */
  function raw(bytes: string): Promise<RawAnswer> {
    const { port } = new URL(server.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), "127.0.0.1");
      let received = "";
      socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
      socket.on("error", reject);
      socket.on("close", () => {
        const [head = "", text = ""] = received.split("\r\n\r\n", 2);
        const [statusLine = "", ...lines] = head.split("\r\n");
        const headers = Object.fromEntries(
          lines.map((line) => [
            line.slice(0, line.indexOf(":")).toLowerCase(),
            line.slice(line.indexOf(":") + 1).trim(),
          ]),
        );
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: Number(statusLine.split(" ")[1]), headers, text: received, body });
      });
      socket.write(bytes, "latin1");
    });
  }

  const request = (lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;
  const get = (...headers: string[]) =>
    request(["GET /tokens HTTP/1.1", "Host: localhost", `SVC-API-KEY: ${KEY}`, ...headers]);

  function expectProblem(answer: RawAnswer, status: number, code: string, detail: RegExp): void {
    expect(answer.status, answer.text).toBe(status);
    expect(answer.headers["content-type"]).toBe("application/problem+json");
    expect(answer.headers["connection"]).toBe("close");
    expect(Number(answer.headers["content-length"])).toBe(Buffer.byteLength(JSON.stringify(answer.body)));
    expect(answer.body).toEqual({
      type: `urn:tessera:problem:${code}`,
      title: expect.any(String),
      status,
      detail: expect.stringMatching(detail),
    });
    expect(answer.text).not.toContain(KEY);
    expect(answer.text).not.toContain(CARD);
  }

  it.each([
    ["a CR", `X-Card: ${CARD}\rinjected`],
    ["a NUL", `X-Card: ${CARD}\u0000`],
    ["a space in a name", `X Card: ${CARD}`],
  ])("answers a header with %s with a 400 problem that quotes nothing of it", async (_what, header) => {
    expectProblem(await raw(get(header)), 400, "malformed-request", /header is malformed/);
  });

  it("answers 64 KB of headers with a 431 problem", async () => {
    expectProblem(
      await raw(get(`X-Card: ${CARD}${"0".repeat(64 * 1024)}`)),
      431,
      "header-fields-too-large",
      /16 KiB/,
    );
  });

  it.each([
    ["garbage for a request line", request([`${CARD} ${KEY}`, "Host: localhost"]), /request line/],
    ["an unknown HTTP version", request([`GET /${CARD} HTTP/9.9`, "Host: localhost"]), /request line/],
    ["a Content-Length that is not a number", get("Content-Length: 4x"), /Content-Length/],
    ["two different Content-Lengths", get("Content-Length: 1", "Content-Length: 2"), /Content-Length/],
    [
      "Content-Length beside chunked encoding",
      get("Content-Length: 3", "Transfer-Encoding: chunked"),
      /Content-Length/,
    ],
    [
      "a malformed chunk",
      `${get("Content-Type: application/json", "Transfer-Encoding: chunked")}zz\r\n`,
      /chunks are malformed/,
    ],
  ])("answers %s with a 400 problem", async (_what, bytes, detail) => {
    expectProblem(await raw(bytes), 400, "malformed-request", detail);
  });

  it("answers an HTTP/1.1 request without Host with a 400 problem like any other", async () => {
    const answer = await raw(request(["GET /tokens HTTP/1.1", `SVC-API-KEY: ${KEY}`, "Connection: close"]));
    expect(answer.status, answer.text).toBe(400);
    expect(answer.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(answer.body).toMatchObject({
      type: "urn:tessera:problem:malformed-request",
      status: 400,
      detail: "An HTTP/1.1 request must carry a Host header.",
    });
    expect(answer.text).not.toContain(KEY);
  });

  it("still answers well-formed requests, and logs none of what it refused", async () => {
    const answer = await raw(request(["GET /healthz HTTP/1.1", "Host: localhost", "Connection: close"]));
    expect(answer.status, answer.text).toBe(200);
    const logged = logs.join("\n");
    expect(logged).toContain("client error refused");
    expect(logged).not.toContain(KEY);
    expect(logged).not.toContain(CARD);
  });
});
