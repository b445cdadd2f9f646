import { pageFromWire } from "./case.js";
import type { Transport } from "./http.js";
import { appendPage, itemsOfEveryPage } from "./paging.js";
import type { AuditEntry, ListAllLogsInput, ListLogsInput, Page } from "./types.js";

/** An entry's `details` and `rule` are the server's record as written: their keys are not renamed. */
const RECORDED: ReadonlySet<string> = new Set(["details", "rule"]);

/**
 * The tenant's audit log (`GET /logs`): who did what to which token, reactor, Application or key, newest first.
 * Needs a management key holding `log:read`. Reached as `client.logs`.
 *
 * @example
 * const { data } = await admin.logs.list({ entityType: "token", entityId: tokenId });
 */
export class Logs {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * One page of entries, filtered by entity, actor, action and time (`startDate` inclusive, `endDate` exclusive).
   *
   * @example
   * const page = await admin.logs.list({ action: "token.read", startDate: new Date(Date.now() - 3_600_000) });
   */
  async list(input: ListLogsInput = {}): Promise<Page<AuditEntry>> {
    const query = new URLSearchParams();
    const set = (name: string, value: string | Date | undefined) => {
      if (value !== undefined) query.set(name, value instanceof Date ? value.toISOString() : value);
    };
    set("entity_type", input.entityType);
    set("entity_id", input.entityId);
    set("actor_id", input.actorId);
    set("action", input.action);
    set("start_date", input.startDate);
    set("end_date", input.endDate);
    appendPage(query, input);
    const body = await this.#transport.send({ method: "GET", path: "/logs", query });
    return pageFromWire<AuditEntry>(body, RECORDED);
  }

  /**
   * Every entry {@link list} would return, page after page, fetched lazily.
   *
   * @example
   * for await (const entry of admin.logs.listAll({ actorId: appId })) console.log(entry.action, entry.createdAt);
   */
  listAll(input: ListAllLogsInput = {}): AsyncIterable<AuditEntry> {
    return itemsOfEveryPage((page) => this.list({ ...input, page }));
  }
}
