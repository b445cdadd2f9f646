import { TesseraClient, TesseraError } from "@tessera/sdk";

/**
 * A client for this origin's API with `apiKey`. `onUnauthorized` hears of every 401, whichever call met it: the
 * key is no longer good (regenerated, deleted, expired), and whoever holds it must forget it.
 */
export function clientFor(apiKey: string, onUnauthorized: () => void): TesseraClient {
  return new TesseraClient({
    baseUrl: window.location.origin,
    apiKey,
    // The console shows what the server says at once; a retried 503 would only make an operator wait.
    maxRetries: 0,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      if (response.status === 401) onUnauthorized();
      return response;
    },
  });
}

/** Field → messages of a 400, or an empty map. */
export function fieldErrors(error: unknown): Record<string, string[]> {
  return error instanceof TesseraError ? (error.errors ?? {}) : {};
}

/** What to tell the operator about a failed call, in one line. */
export function describeError(error: unknown): string {
  if (error instanceof TesseraError) return error.detail ?? error.title ?? `HTTP ${error.status}`;
  return error instanceof Error ? error.message : String(error);
}
