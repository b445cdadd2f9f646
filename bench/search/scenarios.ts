// The searches measured at a million tokens (issue 4, item 6), with what each must answer on the seeded corpus
// and the latency it must stay under on the embedded store.
import type { LoadRequest } from "../scenarios.js";
import { RECENT_FROM, type SeedManifest } from "./seed.js";

export interface SearchScenario {
  readonly name: string;
  readonly query: string;
  readonly page: number;
  readonly size: number;
  /** total_items the answer must report: a fast wrong answer is not a result. */
  readonly expectedTotal: number;
  readonly maxP50Ms: number;
  readonly maxP99Ms?: number;
}

export function searchScenarios(manifest: SeedManifest): SearchScenario[] {
  const { known, counts } = manifest;
  const recentDay = RECENT_FROM.slice(0, 10);
  return [
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
}

export function searchRequest(scenario: SearchScenario, searchKey: string): LoadRequest {
  return {
    method: "POST",
    path: "/tokens/search",
    headers: { "SVC-API-KEY": searchKey, "content-type": "application/json" },
    body: JSON.stringify({ query: scenario.query, page: scenario.page, size: scenario.size }),
    expectedStatus: 200,
  };
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
