import { TOKEN_USER_DATA, fromWire, pageFromWire, toWire } from "./case.js";
import type { Transport } from "./http.js";
import { appendPage, itemsOfEveryPage } from "./paging.js";
import type {
  CreateTokenInput,
  ListAllTokensInput,
  ListTokensInput,
  Page,
  SearchAllTokensInput,
  SearchTokensInput,
  Token,
  UpdateTokenInput,
} from "./types.js";

const MERGE_PATCH = "application/merge-patch+json";

/**
 * The Tokens API: create, read, update, delete, list and search tokens. Each call needs the matching `token:*`
 * permission, and the caller's access rules decide which tokens it reaches and how their `data` is shown
 * (revealed, masked or left out). Reached as `client.tokens`.
 *
 * @example
 * const token = await client.tokens.create({ type: "card_number", data: "4242424242424242" });
 */
export class Tokens {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Creates a token. `data` is validated for the `type` (default `token`); the answer shows it through the
   * caller's `token:create` rule. With `deduplicateToken`, an existing token of the same type and fingerprint
   * is returned instead, marked `_extras: { deduplicated: true }`.
   *
   * @example
   * const token = await client.tokens.create({
   *   type: "card",
   *   data: { number: "4242424242424242", expiration_month: 12, expiration_year: 2030 },
   *   metadata: { customer: "cus_123" },
   *   containers: ["/pci/cards/"],
   *   expiresAt: new Date(Date.now() + 3_600_000),
   * });
   */
  async create(input: CreateTokenInput): Promise<Token> {
    const body = await this.#transport.send({
      method: "POST",
      path: "/tokens",
      body: toWire(input, TOKEN_USER_DATA),
    });
    return fromWire<Token>(body, TOKEN_USER_DATA);
  }

  /**
   * Gets one token, its data shown through the caller's `token:read` rule. A token that does not exist, has
   * expired, or lies outside the caller's rules answers 404 alike.
   *
   * @example
   * const { data, metadata } = await client.tokens.get("01a20106-5a15-738a-9c3b-16c2d95e47cf");
   */
  async get(id: string): Promise<Token> {
    return fromWire<Token>(await this.#transport.send({ method: "GET", path: pathOf(id) }), TOKEN_USER_DATA);
  }

  /**
   * Lists the tokens the caller may read, newest first, one page at a time.
   *
   * @example
   * const { pagination, data } = await client.tokens.list({ type: "card", metadata: { customer: "cus_123" }, size: 50 });
   */
  async list(input: ListTokensInput = {}): Promise<Page<Token>> {
    const query = new URLSearchParams();
    for (const id of input.ids ?? []) query.append("id", id);
    if (input.type !== undefined) query.set("type", input.type);
    for (const [key, value] of Object.entries(input.metadata ?? {})) query.append(`metadata.${key}`, value);
    appendPage(query, input);
    const body = await this.#transport.send({ method: "GET", path: "/tokens", query });
    return pageFromWire<Token>(body, TOKEN_USER_DATA);
  }

  /**
   * Every token {@link list} would return, page after page, fetched lazily as the loop advances.
   *
   * @example
   * for await (const token of client.tokens.listAll({ type: "social_security_number", size: 100 })) {
   *   console.log(token.id, token.metadata);
   * }
   */
  listAll(input: ListAllTokensInput = {}): AsyncIterable<Token> {
    return itemsOfEveryPage((page) => this.list({ ...input, page }));
  }

  /**
   * Changes a token with a JSON merge patch (RFC 7386), sent as `application/merge-patch+json`: only the members
   * given change, and within `data`, `metadata` and `mask` a `null` removes that key. Never retried: HTTP does
   * not count PATCH as idempotent, and a repeat could undo a change someone else made in between.
   *
   * @example
   * const token = await client.tokens.update(id, {
   *   data: { expiration_month: 6, cvc: null },
   *   metadata: { status: "verified", source: null },
   * });
   */
  async update(id: string, patch: UpdateTokenInput): Promise<Token> {
    const body = await this.#transport.send({
      method: "PATCH",
      path: pathOf(id),
      body: toWire(patch, TOKEN_USER_DATA),
      contentType: MERGE_PATCH,
    });
    return fromWire<Token>(body, TOKEN_USER_DATA);
  }

  /**
   * Deletes a token and everything indexed about it; a second delete is a 404.
   *
   * @example
   * await client.tokens.delete(id);
   */
  async delete(id: string): Promise<void> {
    await this.#transport.send({ method: "DELETE", path: pathOf(id) });
  }

  /**
   * Searches the tokens the caller may search with the query language of docs/search.md, newest first; each
   * token's data is shown through the caller's `token:search` rule. A read, so it is retried like a GET.
   *
   * @example
   * const { pagination, data } = await client.tokens.search({
   *   query: 'type:social_security_number AND data:6789 AND container:"/pii/*"',
   *   size: 10,
   * });
   */
  async search(input: SearchTokensInput = {}): Promise<Page<Token>> {
    const body = await this.#transport.send({
      method: "POST",
      path: "/tokens/search",
      body: toWire(input),
      idempotent: true,
    });
    return pageFromWire<Token>(body, TOKEN_USER_DATA);
  }

  /**
   * Every token a {@link search} matches, page after page, fetched lazily as the loop advances.
   *
   * @example
   * for await (const token of client.tokens.searchAll({ query: "metadata.customer:cus_123", size: 100 })) {
   *   await archive(token.id);
   * }
   */
  searchAll(input: SearchAllTokensInput = {}): AsyncIterable<Token> {
    return itemsOfEveryPage((page) => this.search({ ...input, page }));
  }
}

function pathOf(id: string): string {
  return `/tokens/${encodeURIComponent(id)}`;
}
