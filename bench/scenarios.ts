// What is measured. Each scenario is one request, repeated under load against Tessera and compared with a ceiling:
// a bare Fastify server answering a body of the same size, or, for writes, a plain SQLite loop (CeilingKind).
// What is measured. Each scenario is one request, repeated under load against Tessera and compared with a ceiling:
// a bare Fastify server answering a body of the same size, or, for writes, a plain SQLite loop (CeilingKind).
// A scenario may also name a reference request, measured in the same alternating rounds, that its latency is
// held against.
import { CARD_NUMBER, JSON_TYPE, createCardToken, pciApplicationKey, type ScenarioContext } from "./api.js";
import { reactorFixture } from "./reactor-fixture.js";

export type { ScenarioContext } from "./api.js";

/** How many Applications call the reactor in the several-callers warm react. */
const CALLERS_IN_TURN = 4;

export interface LoadRequest {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The status every answer must have; the sanity check and the load run both hold Tessera to it. */
  readonly expectedStatus: number;
  /**
   * Headers that replace `headers` in turn: each connection sends the request with the first set, then the next,
   * and so on round (several callers of one route). `headers` is what the sanity check and the ceiling send.
   */
  readonly headersInTurn?: readonly Readonly<Record<string, string>>[];
}

/**
 * What a scenario's throughput is divided by.
 * - `http`: a bare Fastify server answering `GET /` (or `POST /`, parsing the same body, when the scenario sends
 *   one) with a JSON body of the same size as Tessera's answer.
 * - `storage`: storage-ceiling.ts, a plain better-sqlite3 loop committing one token per transaction with the
 *   server's pragmas and schema; for writes, whose cost is the durable commit rather than the framework. With
 *   --store postgres, storage-ceiling-postgres.ts: plain `pg` clients, one per connection, doing the same.
 */
export type CeilingKind = "http" | "storage";

export interface Scenario {
  readonly name: string;
  readonly ceiling: CeilingKind;
  /** The pass mark, if any: Tessera's req/s divided by the ceiling's must be at least this. */
  readonly minRatio?: number;
  /** The pass mark with --store postgres, where it differs (issue 23's targets for PostgreSQL). */
  readonly minRatioOnPostgres?: number;
  /** If set, Tessera's median p99 latency must also stay below this many milliseconds. */
  readonly maxP99Ms?: number;
  /**
   * If set, `prepare` also returns a reference request of Tessera's, measured in the same alternating rounds, and
   * the scenario's p50 may exceed the reference's (median of the per-round differences) by at most this much.
   */
  readonly reference?: { readonly name: string; readonly maxP50AboveMs: number };
  /** Creates whatever the request needs (tokens, Applications…) and returns the request to repeat. */
  prepare(context: ScenarioContext): Promise<PreparedScenario>;
}

export interface PreparedScenario {
  readonly request: LoadRequest;
  readonly reference?: LoadRequest;
}

export const scenarios: readonly Scenario[] = [
  {
    // Authentication (key hash lookup, permission check) plus one read and the response serialization.
    name: "GET /applications/key",
    ceiling: "http",
    minRatio: 0.35,
    prepare: (context) =>
      Promise.resolve({
        request: {
          method: "GET",
          path: "/applications/key",
          headers: { "SVC-API-KEY": context.managementKey },
          expectedStatus: 200,
        },
      }),
  },
  {
    // Authentication, the token lookup, the access decision, AES-GCM decryption and the response.
    name: "GET /tokens/{id}",
    ceiling: "http",
    minRatio: 0.25,
    // Three round trips to a database on the same two cores (the key, the token, the audit entry's commit).
    minRatioOnPostgres: 0.2,
    maxP99Ms: 25,
    async prepare(context) {
      const writer = await pciApplicationKey(context, "bench token writer", ["token:create"]);
      const reader = await pciApplicationKey(context, "bench token reader", ["token:read"]);
      const tokenId = await createCardToken(context, writer, CARD_NUMBER);
      return {
        request: {
          method: "GET",
          path: `/tokens/${encodeURIComponent(tokenId)}`,
          headers: { "SVC-API-KEY": reader },
          expectedStatus: 200,
        },
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
      const writer = await pciApplicationKey(context, "bench token creator", ["token:create"]);
      return {
        request: {
          method: "POST",
          path: "/tokens",
          headers: { "SVC-API-KEY": writer, "content-type": JSON_TYPE },
          body: JSON.stringify({ type: "card_number", data: CARD_NUMBER }),
          expectedStatus: 201,
        },
      };
    },
  },
  {
    // Authentication, loading the reactor (its configuration decrypted), detokenizing two tokens under token:use
    // (lookups, access decisions, AES-GCM), the round trip through the pipes of the reactor's warm Deno worker,
    // and the answer. A reactor gets up to TESSERA_REACTOR_WORKERS_PER_REACTOR workers (default 2), each running
    // one invocation at a time, so the 10 connections queue on them and on the server. The target is the
    // p50 against a plain token read by the same caller, measured in the same rounds; there is no ratio target,
    // the ratio is shown.
    name: "POST /reactors/{id}/react (warm)",
    ceiling: "http",
    reference: { name: "GET /tokens/{id}", maxP50AboveMs: 3 },
    async prepare(context) {
      const fixture = await reactorFixture(context);
      const reactorId = await fixture.createEchoReactor("bench warm echo");
      return {
        request: {
          method: "POST",
          path: `/reactors/${encodeURIComponent(reactorId)}/react`,
          headers: { "SVC-API-KEY": fixture.callerKey, "content-type": JSON_TYPE },
          body: fixture.reactBody,
          expectedStatus: 200,
        },
        reference: {
          method: "GET",
          path: `/tokens/${encodeURIComponent(fixture.tokenIds[0])}`,
          headers: { "SVC-API-KEY": fixture.callerKey },
          expectedStatus: 200,
        },
      };
    },
  },
  {
    // The same, with the echo reactor called by four Applications in turn (every connection cycles through their
    // keys). A warm worker serves one reactor version for one calling Application (docs/reactors.md#workers), so
    // here the reactor runs on up to four times the workers it has with one caller, each started by its
    // caller's first calls (in the warm-up); the token read beside it is made by the same four in turn.
    name: `POST /reactors/{id}/react (warm, ${CALLERS_IN_TURN} Applications)`,
    ceiling: "http",
    reference: { name: "GET /tokens/{id}", maxP50AboveMs: 3 },
    async prepare(context) {
      const fixture = await reactorFixture(context);
      const reactorId = await fixture.createEchoReactor("bench warm echo, several callers");
      const headersInTurn = [fixture.callerKey, ...(await fixture.moreCallerKeys(CALLERS_IN_TURN - 1))].map(
        (key) => ({ "SVC-API-KEY": key }),
      );
      return {
        request: {
          method: "POST",
          path: `/reactors/${encodeURIComponent(reactorId)}/react`,
          headers: { "SVC-API-KEY": fixture.callerKey, "content-type": JSON_TYPE },
          headersInTurn: headersInTurn.map((headers) => ({ ...headers, "content-type": JSON_TYPE })),
          body: fixture.reactBody,
          expectedStatus: 200,
        },
        reference: {
          method: "GET",
          path: `/tokens/${encodeURIComponent(fixture.tokenIds[0])}`,
          headers: { "SVC-API-KEY": fixture.callerKey },
          headersInTurn,
          expectedStatus: 200,
        },
      };
    },
  },
];
