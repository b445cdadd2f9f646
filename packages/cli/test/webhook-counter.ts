import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Arrival {
  /** The `webhook-id` header. */
  readonly id: string;
  /** When the request had arrived whole (Date.now()). */
  readonly at: number;
  readonly body: any;
}

export interface WebhookCounter {
  readonly url: string;
  /** Every request, repeats included, in arrival order. */
  readonly arrivals: readonly Arrival[];
  /** How many distinct webhook-ids have arrived. */
  distinct(): number;
  close(): Promise<void>;
}

/**
 * A receiver on loopback that answers 200 to everything after `delayMs`, so that at any moment some deliveries
 * are in flight, and records every arrival: a repeated `webhook-id` shows up as a second arrival, not merged.
 */
export async function startWebhookCounter(delayMs: number): Promise<WebhookCounter> {
  const arrivals: Arrival[] = [];
  const seen = new Set<string>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const id = String(request.headers["webhook-id"]);
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        body = undefined;
      }
      arrivals.push({ id, at: Date.now(), body });
      seen.add(id);
      setTimeout(() => response.writeHead(200, { "content-type": "text/plain" }).end("ok"), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    distinct: () => seen.size,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
