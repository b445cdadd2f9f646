// What every reactor measurement needs on one server: a caller that may use, read and create /pci/ tokens, two
// card tokens, the react body that detokenizes both, and echo reactors to invoke with it.
import { isDeepStrictEqual } from "node:util";
import {
  CARD_NUMBER,
  JSON_TYPE,
  SECOND_CARD_NUMBER,
  createCardToken,
  pciApplicationKey,
  postJson,
  stringField,
  type ScenarioContext,
} from "./api.js";
import { httpRequest } from "./server.js";

/** The echo reactor: whatever it is given, detokenized, comes back as `raw`. */
export const ECHO_CODE = "module.exports = async function (req) { return { raw: req.args } };";

export interface ReactorFixture {
  /** `token:use` (to react), `token:read` (the GET reference) and `token:create` on /pci/. */
  readonly callerKey: string;
  readonly tokenIds: readonly [string, string];
  /** `{"args": {"a": "{{ <first> }}", "b": "{{ <second> }}"}}` */
  readonly reactBody: string;
  /** Keys of `count` more Applications holding what the caller holds, on the same tokens. */
  moreCallerKeys(count: number): Promise<string[]>;
  /** Creates an echo reactor without an Application (so `svc` is null) and returns its id. */
  createEchoReactor(name: string): Promise<string>;
  /**
   * One react call on a new loopback connection, checked (200, both card numbers echoed), and its latency in
   * milliseconds as the client sees it: from sending the request to having read the whole answer.
   */
  react(reactorId: string): Promise<number>;
}

const fixtures = new Map<string, Promise<ReactorFixture>>();

/** One fixture per server, made on first use, so scenarios and probes share tokens and the caller. */
export function reactorFixture(context: ScenarioContext): Promise<ReactorFixture> {
  let fixture = fixtures.get(context.baseUrl);
  if (fixture === undefined) {
    fixture = createFixture(context);
    fixtures.set(context.baseUrl, fixture);
  }
  return fixture;
}

async function createFixture(context: ScenarioContext): Promise<ReactorFixture> {
  const callerPermissions = ["token:use", "token:read", "token:create"] as const;
  const callerKey = await pciApplicationKey(context, "bench reactor caller", callerPermissions);
  const tokenIds = [
    await createCardToken(context, callerKey, CARD_NUMBER),
    await createCardToken(context, callerKey, SECOND_CARD_NUMBER),
  ] as const;
  const reactBody = JSON.stringify({ args: { a: `{{ ${tokenIds[0]} }}`, b: `{{ ${tokenIds[1]} }}` } });
  const expected = { raw: { a: CARD_NUMBER, b: SECOND_CARD_NUMBER } };

  const fixture: ReactorFixture = {
    callerKey,
    tokenIds,
    reactBody,
    async moreCallerKeys(count) {
      const keys: string[] = [];
      for (let i = 1; i <= count; i++) {
        keys.push(await pciApplicationKey(context, `bench reactor caller ${i + 1}`, callerPermissions));
      }
      return keys;
    },
    async createEchoReactor(name) {
      const created = await postJson(
        context,
        "/reactors",
        context.managementKey,
        { name, code: ECHO_CODE, configuration: {} },
        201,
      );
      return stringField(created, "id", "POST /reactors");
    },
    async react(reactorId) {
      const path = `/reactors/${encodeURIComponent(reactorId)}/react`;
      const started = performance.now();
      const answer = await httpRequest(context.baseUrl + path, {
        method: "POST",
        headers: { "SVC-API-KEY": callerKey, "content-type": JSON_TYPE },
        body: reactBody,
        // A cold start on a busy machine may take seconds; the server's own reactor timeout is 30 s.
        timeoutMs: 35_000,
      });
      const elapsedMs = performance.now() - started;
      const text = answer.body.toString("utf8");
      if (answer.status !== 200 || !isDeepStrictEqual(parseOrText(text), expected)) {
        throw new Error(`POST ${path} answered HTTP ${answer.status}: ${text}`);
      }
      return elapsedMs;
    },
  };
  // The worker pool starts on the first invocation, with its spare; invoking once here means no measurement
  // pays for starting the pool, and the spare exists before any cold start is timed.
  await fixture.react(await fixture.createEchoReactor("bench pool start"));
  return fixture;
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
