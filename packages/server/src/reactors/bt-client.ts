import type { CreateTokenInput, ListTokensInput, TesseraClient, UpdateTokenInput } from "@tessera/sdk";

/**
 * `req.bt`: what reactor code written for Basis Theory calls on the SDK instance BT hands it (basis-theory-js,
 * wire-format §7 and §9), carried out here with the same client and the same credential as `svc`. The worker only
 * names the method (harness.js); the key never enters it.
 *
 * basis-theory-js sends and answers tokens in camelCase with `data` and `metadata` untouched, as `svc` does, and
 * sends a tokenize or detokenize body exactly as given; so do these. Its optional last argument (request options
 * such as `apiKey` or `correlationId`) is ignored: the call is always made as the reactor's Application.
 */
export const BT_METHODS = [
  "bt.tokens.retrieve",
  "bt.tokens.create",
  "bt.tokens.update",
  "bt.tokens.delete",
  "bt.tokens.list",
  "bt.tokens.search",
  "bt.tokenize",
  "bt.detokenize",
] as const;

export type BtMethod = (typeof BT_METHODS)[number];

export function isBtMethod(method: string): method is BtMethod {
  return (BT_METHODS as readonly string[]).includes(method);
}

export interface BtTarget {
  readonly client: TesseraClient;
  /** POSTs the body as it is and answers the response body as it is (BT's SDK renames nothing there). */
  readonly post: (path: string, body: unknown) => Promise<unknown>;
}

export async function callBt(
  target: BtTarget,
  method: BtMethod,
  params: readonly unknown[],
): Promise<unknown> {
  const { client } = target;
  const [first, second] = params;
  switch (method) {
    case "bt.tokens.retrieve":
      return client.tokens.get(idOf(first));
    case "bt.tokens.create":
      return client.tokens.create(first as CreateTokenInput);
    case "bt.tokens.update":
      return client.tokens.update(idOf(first), second as UpdateTokenInput);
    case "bt.tokens.delete":
      await client.tokens.delete(idOf(first));
      return undefined;
    case "bt.tokens.list":
      return client.tokens.list(listQuery(first));
    case "bt.tokens.search":
      return client.tokens.search(first ?? {});
    case "bt.tokenize":
      return target.post("/tokenize", first);
    case "bt.detokenize":
      return client.detokenize(first);
  }
}

/** An id as BT code passes it; anything else reaches the API as text and is answered there (404, 400). */
function idOf(value: unknown): string {
  return typeof value === "string" ? value : String(value);
}

/** basis-theory-js's `ListTokensQuery`: `id` (one or many), `type`, `metadata`, `page`, `size`. */
function listQuery(value: unknown): ListTokensInput {
  if (typeof value !== "object" || value === null) return {};
  const { id, type, metadata, page, size } = value as Record<string, unknown>;
  return {
    ...(id !== undefined && { ids: (Array.isArray(id) ? id : [id]) as string[] }),
    ...(type !== undefined && { type: type as ListTokensInput["type"] }),
    ...(metadata !== undefined && { metadata: metadata as Record<string, string> }),
    ...(page !== undefined && { page: page as number }),
    ...(size !== undefined && { size: size as number }),
  };
}
