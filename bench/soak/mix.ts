// The soak's fixed workload: which operations, in which proportions, on which seeded data. Every connection sends
// the same cycle of requests, so the mix holds by request count whatever each operation's latency.
import {
  CARD_NUMBER,
  JSON_TYPE,
  SECOND_CARD_NUMBER,
  postJson,
  stringField,
  type ScenarioContext,
} from "../api.js";
import { ECHO_CODE } from "../reactor-fixture.js";
import { httpRequest } from "../server.js";

export type OperationName =
  "GET /tokens/{id}" | "POST /tokens" | "search: data" | "search: metadata" | "react (2 tokens)";

/** What one request of the cycle is; the workload turns it into an autocannon request. */
export interface Operation {
  readonly name: OperationName;
  /** Share of the requests, in percent. */
  readonly weight: number;
  readonly expectedStatus: number;
  /** Called for each request of this operation: the next request to send. */
  next(): {
    readonly method: "GET" | "POST";
    readonly path: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly body?: string;
  };
  /** Whether an answer with the expected status has the right content; only checked where it is cheap. */
  readonly bodyIsRight?: (body: string) => boolean;
}

/** Seeded tokens per type; searches and reads only touch these, so their result sets stay the same size. */
export const SEED_PER_TYPE = 1000;
/** Distinct `customer` metadata values among the seeded tokens: each metadata search finds 20 (a full page). */
const CUSTOMERS = 100;
const SEED_CONCURRENCY = 10;
const SEED_ATTEMPTS = 5;

export interface SeededStore {
  /** An Application that may read, create, use and search tokens in /pci/ and /pii/, in clear. */
  readonly callerKey: string;
  /** Creates answered 400 "took too long" (an expression's time limit, on a starved server) and sent again. */
  readonly seedRetries: number;
  readonly tokenIds: readonly string[];
  readonly ssns: readonly string[];
  readonly reactorId: string;
  /** The react body: detokenizes two seeded card tokens. */
  readonly reactBody: string;
  readonly reactAnswer: unknown;
}

/**
 * Creates the caller, `SEED_PER_TYPE` card tokens and as many SSN tokens (each with a `customer` metadata value),
 * two more card tokens for the react body, and the echo reactor. Every call goes through the API, on one instance.
 */
export async function seedStore(context: ScenarioContext): Promise<SeededStore> {
  const permissions = ["token:read", "token:create", "token:use", "token:search"];
  const created = await postJson(
    context,
    "/applications",
    context.managementKey,
    {
      name: "soak caller",
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "reveal", permissions },
        { priority: 2, container: "/pii/", transform: "reveal", permissions },
      ],
    },
    201,
  );
  const callerKey = stringField(created, "key", "POST /applications");
  let retries = 0;
  const create = async (body: unknown): Promise<string> => {
    for (let attempt = 1; ; attempt++) {
      const answer = await httpRequest(`${context.baseUrl}/tokens`, {
        method: "POST",
        headers: { "SVC-API-KEY": callerKey, "content-type": JSON_TYPE },
        body: JSON.stringify(body),
        timeoutMs: 30_000,
      });
      const text = answer.body.toString("utf8");
      if (answer.status === 201)
        return stringField(JSON.parse(text) as Record<string, unknown>, "id", "POST /tokens");
      // Expressions have a wall-clock limit (100 ms); a server starved of CPU on a loaded machine can exceed it.
      // That is the server's answer to report, not a reason to abandon the seeding.
      if (answer.status === 400 && text.includes("took too long") && attempt < SEED_ATTEMPTS) {
        retries++;
        continue;
      }
      throw new Error(`POST /tokens answered HTTP ${answer.status}, expected 201: ${text}`);
    }
  };

  const ssns = Array.from({ length: SEED_PER_TYPE }, (_, index) => ssn(index));
  const tokenIds = await inParallel(2 * SEED_PER_TYPE, SEED_CONCURRENCY, (index) => {
    const customer = `cus_${index % CUSTOMERS}`;
    return index % 2 === 0
      ? create({ type: "card_number", data: cardNumber(index), metadata: { customer } })
      : create({ type: "social_security_number", data: ssns[(index - 1) / 2], metadata: { customer } });
  });
  const reactTokens = [
    await create({ type: "card_number", data: CARD_NUMBER }),
    await create({ type: "card_number", data: SECOND_CARD_NUMBER }),
  ];
  const reactor = await postJson(
    context,
    "/reactors",
    context.managementKey,
    { name: "soak echo", code: ECHO_CODE, configuration: {} },
    201,
  );
  return {
    callerKey,
    seedRetries: retries,
    tokenIds,
    ssns,
    reactorId: stringField(reactor, "id", "POST /reactors"),
    reactBody: JSON.stringify({ args: { a: `{{ ${reactTokens[0]} }}`, b: `{{ ${reactTokens[1]} }}` } }),
    reactAnswer: { raw: { a: CARD_NUMBER, b: SECOND_CARD_NUMBER } },
  };
}

/**
 * The operations over a seeded store. Reads and searches walk the seeded tokens in turn; creates all send the
 * same body, whose `source` metadata no search asks for, so the searched result sets do not grow as the store
 * does.
 */
export function operations(store: SeededStore): readonly Operation[] {
  const json = { "SVC-API-KEY": store.callerKey, "content-type": JSON_TYPE };
  const reader = { "SVC-API-KEY": store.callerKey };
  const createBody = JSON.stringify({ type: "card_number", data: CARD_NUMBER, metadata: { source: "soak" } });
  const reactPath = `/reactors/${encodeURIComponent(store.reactorId)}/react`;
  const expectedReact = JSON.stringify(store.reactAnswer);
  let read = 0;
  let dataSearch = 0;
  let metadataSearch = 0;
  return [
    {
      name: "GET /tokens/{id}",
      weight: 40,
      expectedStatus: 200,
      next: () => ({
        method: "GET",
        path: `/tokens/${encodeURIComponent(store.tokenIds[read++ % store.tokenIds.length] ?? "")}`,
        headers: reader,
      }),
    },
    {
      name: "POST /tokens",
      weight: 25,
      expectedStatus: 201,
      next: () => ({ method: "POST", path: "/tokens", headers: json, body: createBody }),
    },
    {
      name: "search: data",
      weight: 10,
      expectedStatus: 200,
      next: () => ({
        method: "POST",
        path: "/tokens/search",
        headers: json,
        body: JSON.stringify({ query: `data:"${store.ssns[dataSearch++ % store.ssns.length] ?? ""}"` }),
      }),
      bodyIsRight: (body) => totalItems(body) === 1,
    },
    {
      name: "search: metadata",
      weight: 10,
      expectedStatus: 200,
      next: () => ({
        method: "POST",
        path: "/tokens/search",
        headers: json,
        body: JSON.stringify({ query: `metadata.customer:"cus_${metadataSearch++ % CUSTOMERS}"` }),
      }),
      bodyIsRight: (body) => totalItems(body) === (2 * SEED_PER_TYPE) / CUSTOMERS,
    },
    {
      name: "react (2 tokens)",
      weight: 15,
      expectedStatus: 200,
      next: () => ({ method: "POST", path: reactPath, headers: json, body: store.reactBody }),
      bodyIsRight: (body) => canonicalJson(body) === expectedReact,
    },
  ];
}

/**
 * One cycle of operation indexes, as many of each as its weight (over their greatest common divisor), spread
 * evenly: smooth weighted round robin, so an operation's requests are not bunched together.
 */
export function cycle(weights: readonly number[]): number[] {
  const divisor = weights.reduce((a, b) => gcd(a, b));
  const shares = weights.map((weight) => weight / divisor);
  const total = shares.reduce((a, b) => a + b, 0);
  const current = shares.map(() => 0);
  const order: number[] = [];
  for (let step = 0; step < total; step++) {
    let best = 0;
    for (let index = 0; index < shares.length; index++) {
      current[index] = (current[index] ?? 0) + (shares[index] ?? 0);
      if ((current[index] ?? 0) > (current[best] ?? 0)) best = index;
    }
    current[best] = (current[best] ?? 0) - total;
    order.push(best);
  }
  return order;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

function totalItems(body: string): number | undefined {
  try {
    const parsed = JSON.parse(body) as { pagination?: { total_items?: unknown } };
    const total = parsed.pagination?.total_items;
    return typeof total === "number" ? total : undefined;
  } catch {
    return undefined;
  }
}

function canonicalJson(body: string): string | undefined {
  try {
    return JSON.stringify(JSON.parse(body));
  } catch {
    return undefined;
  }
}

/** Runs `task(0…count-1)` with at most `concurrency` at once; the results in index order. */
async function inParallel<T>(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let nextIndex = 0;
  const lane = async () => {
    for (let index = nextIndex++; index < count; index = nextIndex++) results[index] = await task(index);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return results;
}

/** A distinct 16-digit card number per index, starting 4000, with its Luhn check digit. */
function cardNumber(index: number): string {
  const body = `4000${String(index).padStart(11, "0")}`;
  return body + luhnDigit(body);
}

function luhnDigit(body: string): string {
  let sum = 0;
  for (let position = 0; position < body.length; position++) {
    // Doubled digits are every second one counting from the right of the full number, i.e. from the body's last.
    let digit = Number(body[body.length - 1 - position]);
    if (position % 2 === 0) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return String((10 - (sum % 10)) % 10);
}

/** A distinct NNN-NN-NNNN per index (area 100 up, so never 000). */
function ssn(index: number): string {
  const digits = String(100_000_000 + index * 7919).padStart(9, "0");
  return `${digits.slice(0, 3)}-${digits.slice(3, 5)}-${digits.slice(5)}`;
}
