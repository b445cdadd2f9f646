import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { ForbiddenAddressError, guardedLookup, isPublicAddress } from "./address-guard.js";

export interface PostOptions {
  readonly timeoutMs: number;
  readonly allowPrivate: boolean;
}

/** What one delivery attempt came to: the receiver's status, or why there was none. */
export type PostResult =
  { readonly ok: boolean; readonly status: number } | { readonly ok: false; readonly error: string };

const USER_AGENT = "Tessera-Webhooks/1";
/** Enough to tell a receiver's error page from silence; the rest of a response is not read. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * POSTs one webhook. Redirects are not followed (a 3xx is a failed attempt), since a redirect could lead to an
 * address the callback URL check refused. Any 2xx is success (Standard Webhooks).
 */
export function postWebhook(
  target: string,
  body: string,
  headers: Readonly<Record<string, string>>,
  options: PostOptions,
): Promise<PostResult> {
  const url = new URL(target);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  // A literal address never goes through `lookup`, so it is checked here.
  if (!options.allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) {
    return Promise.resolve({ ok: false, error: new ForbiddenAddressError(host, host).message });
  }
  const transport = url.protocol === "https:" ? https : http;
  return new Promise((resolve) => {
    const request = transport.request(
      url,
      {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body).toString(),
          "user-agent": USER_AGENT,
        },
        ...(!options.allowPrivate && { lookup: guardedLookup() }),
        signal: AbortSignal.timeout(options.timeoutMs),
        agent: false,
      },
      (response) => {
        let read = 0;
        response.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) response.destroy();
        });
        const status = response.statusCode ?? 0;
        const done = () => resolve({ ok: status >= 200 && status < 300, status });
        response.on("end", done);
        response.on("close", done);
        response.on("error", done);
      },
    );
    request.on("error", (error) => resolve({ ok: false, error: describe(error) }));
    request.end(body);
  });
}

function describe(error: Error): string {
  if (error.name === "AbortError" || error.name === "TimeoutError")
    return "the receiver did not answer in time";
  if (error instanceof ForbiddenAddressError) return error.message;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? `${code}: ${error.message}` : error.message;
}
