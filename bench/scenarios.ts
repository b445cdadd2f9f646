// What is measured. Each scenario is one request, repeated under load against Tessera and compared with a ceiling:
// a bare Fastify server answering a body of the same size, or, for writes, a plain SQLite loop (CeilingKind).
import { httpRequest } from "./server.js";

export interface ScenarioContext {
  /** Tessera's base URL, e.g. http://127.0.0.1:41234 */
  readonly baseUrl: string;
  /** The bootstrap Application's management key, which may do anything. */
  readonly managementKey: string;
}

export interface LoadRequest {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The status every answer must have; the sanity check and the load run both hold Tessera to it. */
  readonly expectedStatus: number;
}

/**
 * What a scenario's throughput is divided by.
 * - `http`: a bare Fastify server answering `GET /` with a JSON body of the same size as Tessera's answer.
 * - `storage`: storage-ceiling.ts, a plain better-sqlite3 loop committing one token per transaction with the
 *   server's pragmas and schema; for writes, whose cost is the durable commit rather than the framework.
 */
export type CeilingKind = "http" | "storage";

export interface Scenario {
  readonly name: string;
  readonly ceiling: CeilingKind;
  /** The pass mark: Tessera's req/s divided by the ceiling's must be at least this. */
  readonly minRatio: number;
  /** If set, Tessera's median p99 latency must also stay below this many milliseconds. */
  readonly maxP99Ms?: number;
  /** Creates whatever the request needs (tokens, Applications…) and returns the request to repeat. */
  prepare(context: ScenarioContext): Promise<LoadRequest>;
}

const JSON_TYPE = "application/json";
/** A test card number that passes the Luhn check, as card_number tokens require. */
const CARD_NUMBER = "4242424242424242";
/** The rule both token scenarios' Applications hold: the default card_number container, shown in clear. */
const pciRule = (permission: "token:read" | "token:create") => ({
  priority: 1,
  container: "/pci/",
  transform: "reveal",
  permissions: [permission],
});

/** POSTs JSON with `key` and returns the parsed answer, failing unless the status is `expectedStatus`. */
async function postJson(
  context: ScenarioContext,
  path: string,
  key: string,
  body: unknown,
  expectedStatus: number,
): Promise<Record<string, unknown>> {
  const answer = await httpRequest(context.baseUrl + path, {
    method: "POST",
    headers: { "SVC-API-KEY": key, "content-type": JSON_TYPE },
    body: JSON.stringify(body),
  });
  const text = answer.body.toString("utf8");
  if (answer.status !== expectedStatus) {
    throw new Error(`POST ${path} answered HTTP ${answer.status}, expected ${expectedStatus}: ${text}`);
  }
  return JSON.parse(text) as Record<string, unknown>;
}

/** A private Application holding only `permission` on /pci/; the management key itself may not touch tokens. */
async function pciApplicationKey(
  context: ScenarioContext,
  name: string,
  permission: "token:read" | "token:create",
): Promise<string> {
  const created = await postJson(
    context,
    "/applications",
    context.managementKey,
    { name, type: "private", rules: [pciRule(permission)] },
    201,
  );
  if (typeof created.key !== "string") throw new Error("POST /applications answered without a key");
  return created.key;
}

const createCardBody = JSON.stringify({ type: "card_number", data: CARD_NUMBER });

export const scenarios: readonly Scenario[] = [
  {
    // Authentication (key hash lookup, permission check) plus one read and the response serialization.
    name: "GET /applications/key",
    ceiling: "http",
    minRatio: 0.35,
    prepare: (context) =>
      Promise.resolve({
        method: "GET",
        path: "/applications/key",
        headers: { "SVC-API-KEY": context.managementKey },
        expectedStatus: 200,
      }),
  },
  {
    // Authentication, the token lookup, the access decision, AES-GCM decryption and the response.
    name: "GET /tokens/{id}",
    ceiling: "http",
    minRatio: 0.25,
    maxP99Ms: 25,
    async prepare(context) {
      const writer = await pciApplicationKey(context, "bench token writer", "token:create");
      const reader = await pciApplicationKey(context, "bench token reader", "token:read");
      const token = await postJson(context, "/tokens", writer, JSON.parse(createCardBody), 201);
      if (typeof token.id !== "string") throw new Error("POST /tokens answered without an id");
      return {
        method: "GET",
        path: `/tokens/${encodeURIComponent(token.id)}`,
        headers: { "SVC-API-KEY": reader },
        expectedStatus: 200,
      };
    },
  },
  {
    // Validation, expressions (fingerprint, mask), HMAC, AES-GCM and one durable SQLite transaction per token.
    // The same body every time: the vault keeps duplicates apart (deduplicate_token is off), each with a new id.
    name: "POST /tokens",
    ceiling: "storage",
    minRatio: 0.6,
    maxP99Ms: 25,
    async prepare(context) {
      const writer = await pciApplicationKey(context, "bench token creator", "token:create");
      return {
        method: "POST",
        path: "/tokens",
        headers: { "SVC-API-KEY": writer, "content-type": JSON_TYPE },
        body: createCardBody,
        expectedStatus: 201,
      };
    },
  },
];
