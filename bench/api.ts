// Calls to Tessera's API that scenarios and probes make while preparing: Applications, tokens, reactors.
import { httpRequest } from "./server.js";

export interface ScenarioContext {
  /** Tessera's base URL, e.g. http://127.0.0.1:41234 */
  readonly baseUrl: string;
  /** The bootstrap Application's management key, which may do anything. */
  readonly managementKey: string;
}

export const JSON_TYPE = "application/json";
/** Test card numbers that pass the Luhn check, as card_number tokens require. */
export const CARD_NUMBER = "4242424242424242";
export const SECOND_CARD_NUMBER = "5555555555554444";

export type TokenPermission = "token:read" | "token:create" | "token:use";

/** POSTs JSON with `key` and returns the parsed answer, failing unless the status is `expectedStatus`. */
export async function postJson(
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

/**
 * A private Application holding `permissions` on /pci/ (the default card_number container), shown in clear; the
 * management key itself may not touch tokens.
 */
export async function pciApplicationKey(
  context: ScenarioContext,
  name: string,
  permissions: readonly TokenPermission[],
): Promise<string> {
  const created = await postJson(
    context,
    "/applications",
    context.managementKey,
    { name, type: "private", rules: [{ priority: 1, container: "/pci/", transform: "reveal", permissions }] },
    201,
  );
  return stringField(created, "key", "POST /applications");
}

/** Creates a card_number token (in /pci/) with `key` and returns its id. */
export async function createCardToken(
  context: ScenarioContext,
  key: string,
  number: string,
): Promise<string> {
  const token = await postJson(context, "/tokens", key, { type: "card_number", data: number }, 201);
  return stringField(token, "id", "POST /tokens");
}

export function stringField(answer: Record<string, unknown>, field: string, route: string): string {
  const value = answer[field];
  if (typeof value !== "string") throw new Error(`${route} answered without a ${field}`);
  return value;
}
