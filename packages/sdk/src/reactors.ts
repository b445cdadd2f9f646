import { REACTOR_USER_DATA, fromWire, pageFromWire, toWire } from "./case.js";
import type { Transport } from "./http.js";
import { appendPage, itemsOfEveryPage } from "./paging.js";
import type {
  AcceptedInvocation,
  CreateReactorInput,
  Invocation,
  CreatedReactor,
  ListAllReactorsInput,
  ListReactorsInput,
  Page,
  PatchReactorInput,
  Reactor,
  UpdateReactorInput,
} from "./types.js";

const MERGE_PATCH = "application/merge-patch+json";
/** An invocation's outcome is the reactor's own JSON (and a problem document): returned as written. */
const OUTCOME: ReadonlySet<string> = new Set(["result", "response", "error"]);

/**
 * The Reactors API: JavaScript stored in the vault and run there. Needs a management key holding the matching
 * `reactor:*` permission. Configuration names and values are sent and returned exactly as written. Reached as
 * `client.reactors`.
 *
 * @example
 * const reactor = await client.reactors.create({
 *   name: "charge",
 *   code: "module.exports = async ({ args, configuration }) => ({ raw: { ok: true } });",
 *   configuration: { STRIPE_KEY: "sk_test_123" },
 * });
 */
export class Reactors {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Creates a reactor. The code is compiled on the server, so a syntax error (with its line and column) or a
   * module outside the allow-list is a {@link TesseraValidationError}. The answer includes the Application, if
   * one was given, without its key.
   *
   * @example
   * const { id, application } = await client.reactors.create({
   *   name: "card to processor",
   *   code: `module.exports = async ({ args, configuration, svc }) => ({ raw: { last4: args.card.slice(-4) } });`,
   *   configuration: { PROCESSOR_URL: "https://api.processor.example" },
   *   application: { id: privateApp.id },
   * });
   */
  async create(input: CreateReactorInput): Promise<CreatedReactor> {
    const body = await this.#transport.send({
      method: "POST",
      path: "/reactors",
      body: toWire(input, REACTOR_USER_DATA),
    });
    return fromWire<CreatedReactor>(body, REACTOR_USER_DATA);
  }

  /**
   * Gets one reactor, configuration decrypted. A reactor of another tenant answers 404, exactly like a missing one.
   *
   * @example
   * const { code, configuration, applicationId } = await client.reactors.get(id);
   */
  async get(id: string): Promise<Reactor> {
    const body = await this.#transport.send({ method: "GET", path: pathOf(id) });
    return fromWire<Reactor>(body, REACTOR_USER_DATA);
  }

  /**
   * Lists the tenant's reactors a page at a time, oldest first.
   *
   * @example
   * const { pagination, data } = await client.reactors.list({ name: "stripe*", size: 50 });
   */
  async list(input: ListReactorsInput = {}): Promise<Page<Reactor>> {
    const query = new URLSearchParams();
    for (const id of input.ids ?? []) query.append("id", id);
    if (input.name !== undefined) query.set("name", input.name);
    appendPage(query, input);
    const body = await this.#transport.send({ method: "GET", path: "/reactors", query });
    return pageFromWire<Reactor>(body, REACTOR_USER_DATA);
  }

  /**
   * Every reactor {@link list} would return, page after page, fetched lazily as the loop advances.
   *
   * @example
   * for await (const reactor of client.reactors.listAll({ name: "refund", size: 100 })) {
   *   console.log(reactor.id, reactor.name);
   * }
   */
  listAll(input: ListAllReactorsInput = {}): AsyncIterable<Reactor> {
    return itemsOfEveryPage((page) => this.list({ ...input, page }));
  }

  /**
   * Replaces a reactor (PUT): name, code, configuration and Application all at once. The configuration is
   * required (`{}` for none), so that a replacement never erases it by omission; an omitted Application is removed.
   *
   * @example
   * const reactor = await client.reactors.update(id, {
   *   name: "charge v2",
   *   code: "module.exports = async () => ({ raw: { version: 2 } });",
   *   configuration: { STRIPE_KEY: "sk_test_456" },
   * });
   */
  async update(id: string, input: UpdateReactorInput): Promise<Reactor> {
    const body = await this.#transport.send({
      method: "PUT",
      path: pathOf(id),
      body: toWire(input, REACTOR_USER_DATA),
    });
    return fromWire<Reactor>(body, REACTOR_USER_DATA);
  }

  /**
   * Changes a reactor with a JSON merge patch (RFC 7386), sent as `application/merge-patch+json`: only the members
   * given change; a `null` configuration value removes that name, and `application: null` the Application. The
   * server answers with no body. Never retried: HTTP does not count PATCH as idempotent.
   *
   * @example
   * await client.reactors.patch(id, { configuration: { STRIPE_KEY: "sk_live_789", LEGACY_FLAG: null } });
   */
  async patch(id: string, patch: PatchReactorInput): Promise<void> {
    await this.#transport.send({
      method: "PATCH",
      path: pathOf(id),
      body: toWire(patch, REACTOR_USER_DATA),
      contentType: MERGE_PATCH,
    });
  }

  /**
   * Invokes a reactor (`POST /reactors/{id}/react`, permission `token:use`): `{{ <token id> }}` expressions anywhere
   * in `args` are replaced by token data on the server, and the code runs there with it; neither the data nor the
   * reactor's configuration reaches this client. `args` and the result (`raw`, and `tokens` created from the
   * reactor's `tokenize` output, in wire form) are the caller's and the reactor's own JSON: sent and returned
   * without renaming. Never retried: a reactor may have side effects (a charge).
   *
   * @example
   * const { raw } = await client.reactors.react(reactorId, { args: { card: `{{ ${cardTokenId} }}`, amount: 1299 } });
   */
  async react<Raw = unknown, Tokens = unknown>(
    id: string,
    input: { args?: unknown } = {},
  ): Promise<{ raw?: Raw; tokens?: Tokens }> {
    const body = await this.#transport.send({
      method: "POST",
      path: `${pathOf(id)}/react`,
      body: input.args === undefined ? {} : { args: input.args },
    });
    return body as { raw?: Raw; tokens?: Tokens };
  }

  /**
   * Invokes a reactor asynchronously: the server answers at once with the invocation's id, runs the reactor (for
   * at most `timeoutMs`, 10,000–210,000, default 10,000) and POSTs its outcome to `callbackUrl` as a Standard
   * Webhooks message signed with the tenant's secret, retrying for 24 hours. The arguments are detokenized (and
   * checked) now: an unknown token is a {@link TesseraValidationError}, one the caller may not use a
   * {@link TesseraForbiddenError}. Never retried.
   *
   * @example
   * const { id } = await client.reactors.reactAsync(reactorId, {
   *   args: { card: `{{ ${cardTokenId} }}` },
   *   callbackUrl: "https://api.example.com/tessera/webhooks",
   *   timeoutMs: 60_000,
   * });
   */
  async reactAsync(
    id: string,
    input: { args?: unknown; callbackUrl: string; timeoutMs?: number },
  ): Promise<AcceptedInvocation> {
    const body = await this.#transport.send({
      method: "POST",
      path: `${pathOf(id)}/react`,
      body: {
        ...(input.args !== undefined && { args: input.args }),
        callback_url: input.callbackUrl,
        ...(input.timeoutMs !== undefined && { timeout_ms: input.timeoutMs }),
      },
    });
    return fromWire<AcceptedInvocation>(body);
  }

  /**
   * Gets an asynchronous invocation: `status` (pending, running, completed, failed), its outcome once finished
   * (`result`, `response` or `error`, as the reactor and server wrote them) and `delivery` with every webhook
   * attempt. Only the Application that made the invocation may read it; to others it is a 404.
   *
   * @example
   * const invocation = await client.reactors.getInvocation(reactorId, id);
   * if (invocation.delivery?.status === "failed") console.log(invocation.delivery.attempts.at(-1)?.error);
   */
  async getInvocation(reactorId: string, invocationId: string): Promise<Invocation> {
    const body = await this.#transport.send({
      method: "GET",
      path: `${pathOf(reactorId)}/invocations/${encodeURIComponent(invocationId)}`,
    });
    return fromWire<Invocation>(body, OUTCOME);
  }

  /**
   * Deletes a reactor; a second delete is a 404.
   *
   * @example
   * await client.reactors.delete(id);
   */
  async delete(id: string): Promise<void> {
    await this.#transport.send({ method: "DELETE", path: pathOf(id) });
  }
}

function pathOf(id: string): string {
  return `/reactors/${encodeURIComponent(id)}`;
}
