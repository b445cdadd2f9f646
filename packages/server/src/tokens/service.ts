import { decide, decider, reachOf } from "../access/decide.js";
import type { TokenPermission } from "../access/permissions.js";
import { granteeOf, type Principal } from "../access/principal.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Clock } from "../shared/clock.js";
import { blindIndex, foldCase } from "../crypto/blind-index.js";
import type { TenantKeys } from "../keys/tenant-keys.js";
import type { Keyset, SearchScope } from "../search/compile.js";
import { createCursors, CursorError } from "../search/cursor.js";
import { QueryError } from "../search/parser.js";
import { FilterError, filterPredicate, type Predicate, type TokenFilter } from "../search/predicate.js";
import { createSearch, type PageRow } from "../search/run.js";
import { AppError } from "../server/errors.js";
import {
  offsetOf,
  pageOf,
  type CursorPage,
  type CursorRequest,
  type Page,
  type PageRequest,
} from "../shared/pages.js";
import type { ReadContext, Store } from "../storage/database.js";
import { assertMayWrite, assertUpdateShowsNothing, decideOrNotFound } from "./access.js";
import { shownTokens, tokenEntry } from "./audit-entries.js";
import { createBulk } from "./bulk.js";
import { createTokenCreation } from "./create.js";
import { createDrafts, recordFields, type CreateTokenInput, type PatchTokenInput } from "./draft.js";
import type { ExpressionEngine } from "./expressions.js";
import { sealData } from "./sealing.js";
import { fromPageRow, tokenStore } from "./store.js";
import { TOKEN_TYPES, type TokenType } from "./token-types.js";
import type { TokenRecord } from "./types.js";
import { createViews, type TokenView } from "./views.js";

export type { CreateTokenInput, PatchTokenInput } from "./draft.js";
export type { TokenFilter } from "../search/predicate.js";
export type { TokenView } from "./views.js";

export interface TokenServiceDeps {
  readonly store: Store;
  readonly keys: TenantKeys;
  readonly expressions: ExpressionEngine;
  readonly clock: Clock;
  readonly audit: AuditRecorder;
}

/**
 * The token operations, each a short orchestration of the modules beside it: draft.ts checks and derives
 * (pure), access.ts and access/transform.ts decide what the caller may do and see, views.ts decrypts only what is
 * shown, create.ts and bulk.ts write, search/run.ts searches, store.ts holds the rows, audit-entries.ts records.
 */
/** A filter naming nothing a token could hold is a 400 on that parameter. */
function catchFilter<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof FilterError)) throw error;
    throw AppError.validation({ [error.field]: [error.message] });
  }
}

export function createTokenService({ store, keys, expressions, clock, audit }: TokenServiceDeps) {
  /** Reads outside a transaction share one store, so its precompiled queries are compiled once. */
  const tokens = tokenStore(store.db, store);
  const search = createSearch(store.db, store, TOKEN_TYPES);
  const now = () => clock.now().toISOString();
  const drafts = createDrafts({ expressions, now });
  const views = createViews({ keys, drafts });
  const creation = createTokenCreation({ tokens, keys, drafts, views, audit, clock });
  const bulk = createBulk({ store, tokens, creation, views, audit, clock, expressions });

  async function findVisible(
    principal: Principal,
    id: string,
    permission: TokenPermission,
    read: ReadContext,
  ) {
    const stored = await tokens.findById(principal.tenantId, id, now(), read.versions?.tokens);
    if (stored === undefined) throw AppError.notFound(`Token ${id}`);
    return { stored, decision: decideOrNotFound(principal, permission, stored.record) };
  }

  /** What a search or walk may return: the caller's reach for `permission`, held in the statement. */
  function scopeOf(
    principal: Principal,
    permission: "token:read" | "token:search",
    indexKey: Buffer,
  ): SearchScope {
    const visible = reachOf(granteeOf(principal), permission);
    return {
      tenantId: principal.tenantId,
      now: now(),
      visiblePaths: visible.paths,
      ...(visible.conditions !== undefined && { conditions: visible.conditions }),
      blind: (value: string) => blindIndex(indexKey, value),
    };
  }

  /** The rows a search or walk returned, each with the decision that shows it. */
  function decideRows(
    principal: Principal,
    permission: "token:read" | "token:search",
    rows: readonly PageRow[],
  ) {
    const decideFor = decider(granteeOf(principal));
    return rows.map((row) => {
      const stored = fromPageRow(principal.tenantId, row);
      const decision = decideFor(permission, stored.record);
      // The statement already holds the caller's rules; a row it returns must have a deciding rule.
      if (decision === undefined)
        throw new Error(`search returned token ${stored.record.id} it may not show`);
      return { stored, record: stored.record, decision };
    });
  }

  /**
   * One page of a keyset walk: the caller's rules for `permission` in the statement (pages are full), each token
   * shown through its own decision, the next page's place sealed into a cursor bound to this tenant,
   * Application and walk (search/cursor.ts), so that a cursor altered or carried to another walk is a 400.
   */
  async function walkTokens(
    principal: Principal,
    permission: "token:read" | "token:search",
    what: { readonly query: string } | { readonly predicate: Predicate | undefined },
    walk: string,
    page: CursorRequest,
    audited: { action: "token.list" | "token.search"; details: Record<string, unknown> },
  ): Promise<CursorPage<TokenView>> {
    const indexKey = (await keys.current(principal.tenantId, "index")).key;
    const cursors = createCursors(indexKey);
    const binding = {
      tenantId: principal.tenantId,
      applicationId: principal.application.id,
      sessionId: principal.session?.id,
      walk,
    };
    let after: Keyset | undefined;
    if (page.start !== undefined) {
      try {
        after = cursors.open(page.start, binding);
      } catch (error) {
        if (!(error instanceof CursorError)) throw error;
        throw AppError.validation({ start: [error.message] });
      }
    }
    const { rows, more, shape } = await search
      .walk(what, scopeOf(principal, permission, indexKey), { after, limit: page.size })
      .catch((error: unknown) => {
        if (!(error instanceof QueryError)) throw error;
        throw AppError.validation({ query: [`${error.message} (at offset ${error.offset})`] });
      });
    const decided = decideRows(principal, permission, rows);
    const shown = await views.ofMany(principal.tenantId, decided);
    const last = decided.at(-1)?.record;
    const next =
      more && last !== undefined
        ? cursors.seal({ createdAt: last.createdAt, id: last.id }, binding)
        : undefined;
    const details = {
      ...audited.details,
      ...("query" in what && { query: shape }),
      cursor: page.start !== undefined,
      size: page.size,
      tokens: shownTokens(decided),
    };
    await audit.record([tokenEntry(principal, audited.action, null, { details })]);
    return { items: shown, size: page.size, next };
  }

  return {
    async create(principal: Principal, input: CreateTokenInput): Promise<TokenView> {
      const writeKeys = await creation.writeKeys(principal.tenantId);
      const prepared = creation.prepare(principal, input, writeKeys);
      return store.write(async (write) => {
        await creation.lockDuplicates(write, principal, [prepared]);
        return creation.commit(write, principal, prepared, writeKeys);
      });
    },

    async get(principal: Principal, id: string, read: ReadContext = {}): Promise<TokenView> {
      const { stored, decision } = await findVisible(principal, id, "token:read", read);
      const view = await views.ofStored(decision, stored);
      await audit.record([tokenEntry(principal, "token.read", id, { decision })]);
      return view;
    },

    /**
     * The containers of a token of the caller's tenant, whatever the caller's rules, for POST /access/explain
     * (whose route requires application:read). Read from the row's clear columns: the data is neither opened nor
     * returned. A missing or expired token is a 404, as for every other read.
     */
    async containersOf(principal: Principal, id: string, read: ReadContext = {}): Promise<readonly string[]> {
      const stored = await tokens.findById(principal.tenantId, id, now(), read.versions?.tokens);
      if (stored === undefined) throw AppError.notFound(`Token ${id}`);
      return stored.record.containers;
    },

    async update(
      principal: Principal,
      id: string,
      patch: PatchTokenInput,
      read: ReadContext = {},
    ): Promise<TokenView> {
      const writeKeys = await creation.writeKeys(principal.tenantId);
      const { stored } = await findVisible(principal, id, "token:update", read);
      const before = stored.record;
      const shaping = drafts.shapingOf(before, patch);
      // The fields that decide what the data shows as. Checked before anything is evaluated over the data: an
      // expression's errors, too, would tell about it.
      assertUpdateShowsNothing(principal, before, shaping);
      const draft = drafts.patched(await views.open(stored), patch, shaping);
      if (patch.containers !== undefined) {
        assertMayWrite(principal, "token:update", { id: before.id, containers: draft.containers });
      }
      const derived = drafts.derive(draft, writeKeys);

      const record: TokenRecord = {
        ...before,
        ...recordFields(draft, derived),
        modifiedBy: principal.application.id,
        modifiedAt: now(),
      };
      const sealed = sealData(writeKeys.data, record.tenantId, record.id, draft.data);
      const decision = decide(granteeOf(principal), "token:update", record);
      const replaced = await store.write(async (write) => {
        if (!(await tokens.replace(write, record, sealed, derived.rows, stored.sealed))) return false;
        const details = { fields: Object.keys(patch).sort() };
        await audit.within(write, [tokenEntry(principal, "token.update", id, { decision, details })]);
        return true;
      });
      if (!replaced) {
        throw new AppError("conflict", `Token ${id} was changed or deleted while this update ran; retry it.`);
      }
      // Never through the update rule: the answer shows what a read would, and nothing without token:read.
      const readable = decide(granteeOf(principal), "token:read", record);
      return readable === undefined ? { record } : views.view(readable, record, draft.data);
    },

    async delete(principal: Principal, id: string, read: ReadContext = {}): Promise<void> {
      const { decision } = await findVisible(principal, id, "token:delete", read);
      const deleted = await store.write(async (write) => {
        if (!(await tokens.delete(write, principal.tenantId, id))) return false;
        await audit.within(write, [tokenEntry(principal, "token.delete", id, { decision })]);
        return true;
      });
      if (!deleted) throw AppError.notFound(`Token ${id}`);
    },

    async list(
      principal: Principal,
      filter: { ids: readonly string[]; type?: TokenType; metadata: readonly (readonly [string, string])[] },
      page: PageRequest,
    ): Promise<Page<TokenView>> {
      const { items, total } = await tokens.list(principal.tenantId, {
        ids: filter.ids,
        ...(filter.type !== undefined && { type: filter.type }),
        metadata: filter.metadata.map(([k, v]) => [k, foldCase(v)] as const),
        readable: reachOf(granteeOf(principal), "token:read"),
        now: now(),
        offset: offsetOf(page),
        limit: page.size,
      });
      const decided = items.map((stored) => ({
        stored,
        record: stored.record,
        decision: decideOrNotFound(principal, "token:read", stored.record),
      }));
      const shown = await views.ofMany(principal.tenantId, decided);
      const details = { page: page.page, size: page.size, total, tokens: shownTokens(decided) };
      await audit.record([tokenEntry(principal, "token.list", null, { details })]);
      return pageOf(shown, total, page);
    },

    /** Search (spec §4.1): one statement for the page and one for the total, both holding the caller's rules. */
    async search(principal: Principal, query: string, page: PageRequest): Promise<Page<TokenView>> {
      const indexKey = (await keys.current(principal.tenantId, "index")).key;
      const { rows, total, shape } = await search
        .search(query, scopeOf(principal, "token:search", indexKey), {
          offset: offsetOf(page),
          limit: page.size,
        })
        .catch((error: unknown) => {
          if (!(error instanceof QueryError)) throw error;
          // Every problem with a query is a 400 naming its place (DESIGN §7).
          throw AppError.validation({ query: [`${error.message} (at offset ${error.offset})`] });
        });
      const decided = decideRows(principal, "token:search", rows);
      const shown = await views.ofMany(principal.tenantId, decided);
      const details = { query: shape, page: page.page, size: page.size, total, tokens: shownTokens(decided) };
      await audit.record([tokenEntry(principal, "token.search", null, { details })]);
      return pageOf(shown, total, page);
    },

    /** `GET /v2/tokens` (wire-format §4.3): the filters as a search predicate, walked by keyset under token:read. */
    async listV2(
      principal: Principal,
      filter: TokenFilter,
      page: CursorRequest,
    ): Promise<CursorPage<TokenView>> {
      const predicate = catchFilter(() => filterPredicate(filter, { types: TOKEN_TYPES }));
      const canonical = JSON.stringify([
        filter.type ?? null,
        filter.container ?? null,
        filter.fingerprint ?? null,
        Object.entries(filter.metadata ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      ]);
      return walkTokens(principal, "token:read", { predicate }, `list\u0000${canonical}`, page, {
        action: "token.list",
        details: { filters: Object.keys(filter).sort() },
      });
    },

    /** `POST /v2/tokens/search` (wire-format §4.4): the same language, compiler and rules as `search`, by keyset. */
    async searchV2(principal: Principal, query: string, page: CursorRequest): Promise<CursorPage<TokenView>> {
      return walkTokens(principal, "token:search", { query }, `search\u0000${query}`, page, {
        action: "token.search",
        details: {},
      });
    },

    tokenize: bulk.tokenize,
    detokenize: bulk.detokenize,

    /** Deletes expired tokens; they were invisible from the moment they expired. */
    sweepExpired(): Promise<number> {
      return tokens.deleteExpired(now());
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
