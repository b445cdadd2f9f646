import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the loopback server saw it. */
export interface Attempt {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: string;
  /** `performance.now()` when the request arrived. */
  readonly at: number;
}

/** What to answer: a status, optional headers, and a JSON body (a problem document by default). */
export interface Reply {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
}

export interface Loopback {
  readonly url: string;
  readonly attempts: Attempt[];
  /** The replies for the next requests, in order; once they run out, the last one repeats. */
  script(...replies: Reply[]): void;
  close(): Promise<void>;
}

/**
 * A scripted HTTP server on 127.0.0.1 standing in for a server (or a proxy) that fails: for the retry and
 * error-mapping tests, which need statuses the real server does not produce on demand.
 */
export async function startLoopback(): Promise<Loopback> {
  const attempts: Attempt[] = [];
  let replies: Reply[] = [{ status: 200, body: {} }];
  let next = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      attempts.push({
        method: request.method ?? "",
        path: request.url ?? "",
        contentType: request.headers["content-type"],
        body: Buffer.concat(chunks).toString("utf8"),
        at: performance.now(),
      });
      const reply = replies[Math.min(next++, replies.length - 1)] ?? { status: 500 };
      const body =
        reply.body ??
        (reply.status >= 400
          ? { type: "urn:tessera:problem:test", title: "Scripted", status: reply.status, detail: "scripted" }
          : {});
      response
        .writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
        .end(reply.status === 204 ? undefined : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    attempts,
    script(...scripted) {
      replies = scripted;
      next = 0;
      attempts.length = 0;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}
