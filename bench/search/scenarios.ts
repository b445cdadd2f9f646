// The searches measured at a million tokens (issue 4, item 6), with what each must answer on the seeded corpus
// and the latency it must stay under on the embedded store; each also through POST /v2/tokens/search (issue 18),
// walked by cursor to the same page, held to the same targets and checked against v1's page.
import type { LoadRequest } from "../scenarios.js";
import { RECENT_FROM, type SeedManifest } from "./seed.js";

export interface SearchScenario {
  readonly name: string;
  /** v1: `POST /tokens/search` by page number; v2: `POST /v2/tokens/search`, the page reached by cursor. */
  readonly api: "v1" | "v2";
  readonly query: string;
  readonly page: number;
  readonly size: number;
  /** total_items the answer must report: a fast wrong answer is not a result. */
  readonly expectedTotal: number;
  readonly maxP50Ms: number;
  readonly maxP99Ms?: number;
}

export function searchScenarios(manifest: SeedManifest): SearchScenario[] {
  const v1 = v1Scenarios(manifest);
  // The v2 search must meet v1's targets on the same queries (issue 18 item 2).
  return [
    ...v1,
    ...v1.map((s) => ({ ...s, api: "v2" as const, name: s.name.replace(/^\((\w)\)/, "(v2 $1)") })),
  ];
}

function v1Scenarios(manifest: SeedManifest): SearchScenario[] {
  const { known, counts } = manifest;
  const recentDay = RECENT_FROM.slice(0, 10);
  const scenarios: Omit<SearchScenario, "api">[] = [
    {
      name: "(a) data: one SSN",
      query: `data:"${known.ssn}"`,
      page: 1,
      size: 20,
      expectedTotal: 1,
      maxP50Ms: 5,
      maxP99Ms: 25,
    },
    {
      name: "(b) metadata.customer_id",
      query: `metadata.customer_id:"${known.customerId}"`,
      page: 1,
      size: 20,
      expectedTotal: known.customerTokens,
      maxP50Ms: 5,
      maxP99Ms: 25,
    },
    {
      name: "(c) type AND region AND created_at",
      query: `type:social_security_number AND metadata.region:eu AND created_at:[${recentDay} TO *]`,
      page: 1,
      size: 20,
      expectedTotal: counts.ssnEuRecent,
      maxP50Ms: 25,
    },
    {
      name: "(d) container subtree /pci/*",
      query: 'container:"/pci/*"',
      page: 1,
      size: 20,
      expectedTotal: counts.pciSubtree,
      maxP50Ms: 25,
    },
    {
      name: "(e) type:token, page 500",
      query: "type:token",
      page: 500,
      size: 20,
      expectedTotal: counts.byType.token,
      maxP50Ms: 60,
    },
  ];
  return scenarios.map((s) => ({ ...s, api: "v1" }));
}

/** The scenario's request; a v2 page after the first starts at `start`, the cursor the walk reached. */
export function searchRequest(scenario: SearchScenario, searchKey: string, start?: string): LoadRequest {
  const headers = { "SVC-API-KEY": searchKey, "content-type": "application/json" };
  return scenario.api === "v1"
    ? {
        method: "POST",
        path: "/tokens/search",
        headers,
        body: JSON.stringify({ query: scenario.query, page: scenario.page, size: scenario.size }),
        expectedStatus: 200,
      }
    : {
        method: "POST",
        path: "/v2/tokens/search",
        headers,
        body: JSON.stringify({ query: scenario.query, size: scenario.size, ...(start && { start }) }),
        expectedStatus: 200,
      };
}

/**
 * Why a v2 answer is wrong, or undefined: its tokens must be v1's page of the same number (`reference`, the ids
 * v1 answered, itself checked against the corpus), in the same order, and `next` present exactly when more follow.
 */
export function answerProblemV2(
  scenario: SearchScenario,
  body: string,
  reference: readonly string[],
): string | undefined {
  let answer: { pagination?: { next?: unknown }; data?: { id?: unknown }[] };
  try {
    answer = JSON.parse(body) as typeof answer;
  } catch {
    return "the answer is not JSON";
  }
  const ids = Array.isArray(answer.data) ? answer.data.map((token) => token.id) : undefined;
  if (ids === undefined || JSON.stringify(ids) !== JSON.stringify(reference)) {
    return `${ids?.length ?? "no"} tokens that are not v1's page ${scenario.page} (${reference.length} tokens)`;
  }
  const more = scenario.expectedTotal > scenario.page * scenario.size;
  const next = answer.pagination?.next;
  if (more !== (typeof next === "string" && next !== "")) {
    return `pagination.next ${JSON.stringify(next)}, expected ${more ? "a cursor" : "null"}`;
  }
  return undefined;
}

/** Why an answer is wrong for `scenario`, or undefined if its page and total are what the corpus holds. */
export function answerProblem(scenario: SearchScenario, body: string): string | undefined {
  let answer: { pagination?: { total_items?: unknown }; data?: unknown };
  try {
    answer = JSON.parse(body) as typeof answer;
  } catch {
    return "the answer is not JSON";
  }
  const total = answer.pagination?.total_items;
  const expectedItems = Math.max(
    0,
    Math.min(scenario.size, scenario.expectedTotal - (scenario.page - 1) * scenario.size),
  );
  if (total !== scenario.expectedTotal) {
    return `total_items ${String(total)}, expected ${scenario.expectedTotal}`;
  }
  if (!Array.isArray(answer.data) || answer.data.length !== expectedItems) {
    return `${Array.isArray(answer.data) ? answer.data.length : "no"} tokens on the page, expected ${expectedItems}`;
  }
  return undefined;
}
