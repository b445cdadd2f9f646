import { TesseraClient, TesseraConnectionError } from "@tessera/sdk";
import packageJson from "../package.json" with { type: "json" };
import type { Values } from "./args.js";
import { ConfigurationError, ServerUnreachable } from "./failure.js";

/** The server's own default address (TESSERA_HOST and TESSERA_PORT in packages/server/src/config.ts). */
export const DEFAULT_URL = "http://127.0.0.1:3000";

/** The flags every command that talks to a server takes. */
export const SERVER_FLAGS = {
  url: { type: "string", value: "<url>", help: `Server URL (default: $TESSERA_URL, else ${DEFAULT_URL})` },
  key: { type: "string", value: "<key>", help: "API key (default: $SVC_API_KEY, which keeps it out of ps)" },
  json: { type: "boolean", help: "Print the resource as the API returns it, as JSON" },
} as const;

export type ServerValues = Values<typeof SERVER_FLAGS>;

export interface ClientOptions {
  /** How long to wait for each answer; default the SDK's 30 s. */
  readonly timeoutMs?: number;
}

/**
 * Runs `work` with a client for the server the flags and environment name. A failure to reach the server is
 * rethrown with that server's URL, so the message can name it.
 */
export async function withClient<T>(
  values: ServerValues,
  work: (client: TesseraClient) => Promise<T>,
  { timeoutMs }: ClientOptions = {},
): Promise<T> {
  const url = serverUrl(values.url ?? nonEmpty(process.env.TESSERA_URL) ?? DEFAULT_URL);
  const apiKey = values.key ?? nonEmpty(process.env.SVC_API_KEY);
  if (apiKey === undefined || apiKey === "") {
    throw new ConfigurationError("no API key: set SVC_API_KEY or pass --key");
  }
  const client = new TesseraClient({
    baseUrl: url,
    apiKey,
    userAgent: `tessera-cli/${packageJson.version}`,
    fetch: withoutRedirects,
    ...(timeoutMs !== undefined && { timeoutMs }),
  });
  try {
    return await work(client);
  } catch (error) {
    if (error instanceof TesseraConnectionError) throw new ServerUnreachable(url, error);
    throw error;
  }
}

/**
 * fetch follows redirects by default and sends every header again, SVC-API-KEY included, to wherever `Location`
 * points, even another host. A reactor chooses its own status and headers (CustomHttpResponseError), so a
 * followed redirect would hand the caller's key to an address of the reactor's choosing. A redirect is therefore
 * answered as it is, and reported as a failure.
 */
const withoutRedirects: typeof fetch = (input, init) => fetch(input, { ...init, redirect: "manual" });

function serverUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigurationError(`the server URL '${text}' is not a URL: set TESSERA_URL or --url`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigurationError(`the server URL '${text}' must start with http:// or https://`);
  }
  return text.replace(/\/+$/, "");
}

/** An empty variable counts as unset, as in the server's configuration. */
function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
