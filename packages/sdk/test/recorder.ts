import type { Fetch } from "../src/index.js";

/** A request as it went on the wire. */
export interface SentRequest {
  readonly url: string;
  readonly method: string | undefined;
  readonly headers: Headers;
  readonly body: string | undefined;
}

/** A fetch that records each request, then sends it for real: the tests read what the SDK put on the wire. */
export function recordingFetch(sent: SentRequest[]): Fetch {
  return (input, init) => {
    sent.push({
      url: typeof input === "string" ? input : input instanceof URL ? input.href : input.url,
      method: init?.method,
      headers: new Headers(init?.headers),
      body: typeof init?.body === "string" ? init.body : undefined,
    });
    return fetch(input, init);
  };
}

export function lastOf(sent: SentRequest[]): SentRequest {
  const request = sent[sent.length - 1];
  if (request === undefined) throw new Error("nothing sent");
  return request;
}
