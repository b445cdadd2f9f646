import { isDeepStrictEqual } from "node:util";
import {
  decide,
  decideAmong,
  effectiveRules,
  mayWriteInto,
  ruleContainers,
  widenedBy,
  type Decision,
} from "../access/decide.js";
import type { TokenPermission } from "../access/permissions.js";
import { containerProblem, normalizeContainer } from "../access/rules.js";
import type { Principal } from "../applications/types.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { AuditRule } from "../audit/types.js";
import type { Clock } from "../clock.js";
import { blindIndex, fingerprintOf, foldCase } from "../crypto/blind-index.js";
import { uuidv7 } from "../crypto/uuid-v7.js";
import { nestsDeeperThan } from "../json/depth.js";
import { isPlainObject, mergePatch } from "../json/merge-patch.js";
import {
  AppError,
  addError,
  hasControlCharacter,
  hasLoneSurrogate,
  parseTimestamp,
  type FieldErrors,
} from "../server/errors.js";
import { parseQuery, QueryError } from "../search/parser.js";
import { queryShape } from "../search/shape.js";
import { toPredicate, type Predicate } from "../search/predicate.js";
import { offsetOf, toPage, type Page, type PageRequest } from "../server/pagination.js";
import { isUniqueViolation, type Executor, type RunWrite, type Store } from "../storage/database.js";
import type { TenantKeys, VersionedKey } from "../tenants/keys.js";
import { cardExposureProblem, checkBudget, createCardExposureCheck, isCardType } from "./card-mask.js";
import { ExpressionError, type ExpressionEngine, type ExpressionScope } from "./expressions.js";
import { MAX_METADATA_ENTRIES } from "./schemas.js";
import { openData, sealData } from "./sealing.js";
import { tokenStore, type StoredToken } from "./store.js";
import { TOKEN_TYPES, tokenTypeSpec, validateTokenData, type TokenType } from "./token-types.js";
import type { MaskExpression, Token, TokenIndexRows, TokenRecord } from "./types.js";

/** Serialized token data above this is refused: a vault holds secrets, not documents. */
export const MAX_DATA_BYTES = 32 * 1024;
export const MAX_TOKENIZE_ITEMS = 1000;
export const MAX_DETOKENIZE_TOKENS = 100;
export const MAX_BODY_DEPTH = 32;
const ID_LENGTH = { min: 3, max: 400 };

export interface CreateTokenInput {
  readonly id?: string;
  readonly type?: TokenType;
  readonly data: unknown;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly searchIndexes?: readonly string[];
  readonly fingerprintExpression?: string;
  readonly mask?: MaskExpression;
  readonly deduplicateToken?: boolean;
  readonly expiresAt?: string;
  readonly containers?: readonly string[];
}

/** RFC 7386 semantics: an absent member is untouched, `null` removes or resets it. */
export interface PatchTokenInput {
  readonly data?: unknown;
  readonly metadata?: Readonly<Record<string, string | null>> | null;
  readonly searchIndexes?: readonly string[] | null;
  readonly fingerprintExpression?: string | null;
  readonly mask?: string | Readonly<Record<string, string | null>> | null;
  readonly expiresAt?: string | null;
  readonly containers?: readonly string[];
}

/** A token as one caller may see it: `shown` is absent when its rule redacts the data. */
export interface TokenView {
  readonly record: TokenRecord;
  readonly shown?: { readonly value: unknown };
  readonly deduplicated?: boolean;
  /** A deduplicated token the caller may not read: only id, type, tenant, fingerprint and containers. */
  readonly identityOnly?: boolean;
}

export interface TokenServiceDeps {
  readonly store: Store;
  readonly keys: TenantKeys;
  readonly expressions: ExpressionEngine;
  readonly clock: Clock;
  readonly audit: AuditRecorder;
}

interface WriteKeys {
  readonly data: VersionedKey;
  readonly fingerprint: Buffer;
  readonly index: Buffer;
}

/** The fields every write recomputes from: the request on create, the patched token on update. */
interface TokenDraft {
  readonly type: TokenType;
  readonly data: unknown;
  readonly metadata: Readonly<Record<string, string>>;
  readonly searchIndexes: readonly string[];
  readonly fingerprintExpression: string;
  readonly mask: MaskExpression | null;
  readonly containers: readonly string[];
  readonly expiresAt: string | null;
}

interface Derived {
  readonly fingerprint: string;
  readonly rows: TokenIndexRows;
}

/** A create checked and derived in full, before its transaction: all that is left is to look and to write. */
interface PreparedCreate {
  readonly draft: TokenDraft;
  readonly derived: Derived;
  readonly id: string | undefined;
  readonly deduplicate: boolean;
}

/**
 * A query as the search compiler takes it, and its shape for the audit log (values removed); every problem with
 * it is a 400 naming its place (DESIGN §7).
 */
function parseSearch(query: string): { predicate: Predicate | undefined; shape: string } {
  try {
    const tree = parseQuery(query);
    return { predicate: tree && toPredicate(tree, { types: TOKEN_TYPES }), shape: queryShape(tree) };
  } catch (error) {
    if (!(error instanceof QueryError)) throw error;
    throw AppError.validation({ query: [`${error.message} (at offset ${error.offset})`] });
  }
}

/** The deciding rule as the audit log keeps it. */
function ruleOf(decision: Decision): AuditRule {
  return {
    container: decision.rule.container ?? "/",
    priority: decision.rule.priority,
    transform: decision.transform,
  };
}

/** Which tokens a read showed, and how: ids and transforms, never data. */
function shownTokens(views: readonly { record: TokenRecord; decision?: Decision }[]) {
  return views.map(({ record, decision }) => ({
    id: record.id,
    ...(decision !== undefined && {
      transform: decision.transform,
      container: decision.rule.container ?? "/",
    }),
  }));
}

export function createTokenService({ store, keys, expressions, clock, audit }: TokenServiceDeps) {
  /** Reads outside a transaction share one store, so its precompiled queries are compiled once. */
  const tokens = tokenStore(store.db, store);
  const cardExposure = createCardExposureCheck(expressions);
  const now = () => clock.now().toISOString();

  /**
   * Keys are resolved before a transaction opens: on SQLite the transaction holds the only connection, so a
   * key lookup inside it would wait on itself.
   */
  async function writeKeys(tenantId: string): Promise<WriteKeys> {
    const [data, fingerprint, index] = await Promise.all([
      keys.current(tenantId, "data"),
      keys.current(tenantId, "fingerprint"),
      keys.current(tenantId, "index"),
    ]);
    return { data, fingerprint: fingerprint.key, index: index.key };
  }

  async function open(stored: StoredToken): Promise<Token> {
    const { record, sealed } = stored;
    const key = await keys.version(record.tenantId, "data", sealed.keyVersion);
    return { ...record, data: openData(key, record.tenantId, record.id, sealed) };
  }

  /** The data keys of a tenant's tokens, looked up once per key version rather than once per token. */
  async function dataKeys(tenantId: string, items: readonly StoredToken[]): Promise<Map<number, Buffer>> {
    const found = new Map<number, Buffer>();
    for (const { sealed } of items) {
      if (!found.has(sealed.keyVersion)) {
        found.set(sealed.keyVersion, await keys.version(tenantId, "data", sealed.keyVersion));
      }
    }
    return found;
  }

  function evaluate(template: string, scope: ExpressionScope, field: string, errors: FieldErrors): unknown {
    try {
      return expressions.evaluate(template, scope);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      addError(errors, field, error.message);
      return undefined;
    }
  }

  function evaluateMask(mask: MaskExpression, data: unknown, errors: FieldErrors): unknown {
    if (typeof mask === "string") return evaluate(mask, { data }, "mask", errors);
    return Object.fromEntries(
      Object.entries(mask).map(([k, t]) => [k, evaluate(t, { data }, `mask.${k}`, errors)]),
    );
  }

  function show(decision: Decision, token: Token): TokenView {
    return showData(decision, token, token.data);
  }

  /** Whether `decision` shows any of the token's data: a token shown without it is never decrypted. */
  function showsData(decision: Decision, record: TokenRecord): boolean {
    return decision.transform === "reveal" || (decision.transform === "mask" && record.mask !== null);
  }

  async function showStored(decision: Decision, stored: StoredToken): Promise<TokenView> {
    return showsData(decision, stored.record)
      ? show(decision, await open(stored))
      : { record: stored.record };
  }

  /** Redact drops the data; mask shows the evaluated mask, or nothing when the token has none; reveal shows it. */
  function showData(decision: Decision, record: TokenRecord, data: unknown): TokenView {
    switch (decision.transform) {
      case "reveal":
        return { record, shown: { value: data } };
      case "redact":
        return { record };
      case "mask": {
        if (record.mask === null) return { record };
        const errors: FieldErrors = {};
        const masked = evaluateMask(record.mask, data, errors);
        // A mask that no longer fits the data (changed by an update) fails closed: nothing is shown.
        return Object.keys(errors).length > 0 ? { record } : { record, shown: { value: masked } };
      }
    }
  }

  /** Validates a draft and derives what is stored beside it; throws one 400 with every problem found. */
  function derive(draft: TokenDraft, writeKey: WriteKeys, errors: FieldErrors): Derived {
    const blindValues: string[] = [];
    draft.searchIndexes.forEach((template, i) => {
      const value = evaluate(template, { data: draft.data }, `search_indexes[${i}]`, errors);
      if (value === undefined && errors[`search_indexes[${i}]`] !== undefined) return;
      const single =
        (typeof value === "string" && value !== "") ||
        typeof value === "number" ||
        typeof value === "boolean";
      if (!single) {
        addError(errors, `search_indexes[${i}]`, "must evaluate to one non-empty value");
        return;
      }
      blindValues.push(blindIndex(writeKey.index, String(value)));
    });
    // Basis Theory's fingerprints may combine data and metadata (wire-format §4.5).
    const printed = evaluate(
      draft.fingerprintExpression,
      { data: draft.data, metadata: draft.metadata },
      "fingerprint_expression",
      errors,
    );
    if (draft.mask !== null) evaluateMask(draft.mask, draft.data, errors);
    if (Object.keys(errors).length > 0) throw AppError.validation(errors);
    const text = typeof printed === "string" ? printed : JSON.stringify(printed ?? null);
    return {
      fingerprint: fingerprintOf(writeKey.fingerprint, text),
      rows: {
        blindValues,
        containers: draft.containers,
        metadata: Object.entries(draft.metadata).map(([k, v]) => [k, foldCase(v)] as const),
      },
    };
  }

  /**
   * Field checks that need no token data: data, containers, metadata, expiry, expressions' syntax, and what a
   * card's mask may show (evaluated over synthetic cards only). `given`: what the request sets, which alone is
   * checked for blank indexes and card exposure, so that a token stored before those checks can still be updated.
   */
  function checkDraft(
    draft: TokenDraft,
    errors: FieldErrors,
    given: { indexes: boolean; mask: boolean },
  ): void {
    const add = (field: string, message: string) => addError(errors, field, message);
    if (given.indexes && !tokenTypeSpec(draft.type).acceptsSearchIndexes) {
      add(
        "search_indexes",
        "are accepted only for token, social_security_number and employer_id_number tokens",
      );
    }
    if (draft.containers.length === 0) add("containers", "must hold at least one container");
    if (Object.keys(draft.metadata).length > MAX_METADATA_ENTRIES) {
      add("metadata", `must hold at most ${MAX_METADATA_ENTRIES} entries`);
    }
    draft.containers.forEach((c, i) => {
      const problem = containerProblem(c);
      if (problem !== undefined) add(`containers[${i}]`, problem);
    });
    for (const [key, value] of Object.entries(draft.metadata)) {
      if (key.trim() === "" || [key, value].some((t) => t.includes("\u0000") || hasLoneSurrogate(t))) {
        add(
          `metadata.${key}`,
          "keys must not be blank; keys and values must be well-formed text without NUL characters",
        );
      }
    }
    if (draft.expiresAt !== null && draft.expiresAt <= now()) add("expires_at", "must be in the future");
    const syntax = (field: string, template: string) => {
      try {
        expressions.check(template);
      } catch (error) {
        if (!(error instanceof ExpressionError)) throw error;
        add(field, error.message);
      }
    };
    if (draft.fingerprintExpression.includes("\u0000"))
      add("fingerprint_expression", "must not contain NUL characters");
    draft.searchIndexes.forEach((t, i) => {
      // Blank text is one constant value for every token: it finds them all, which is no index.
      if (given.indexes && t.trim() === "") add(`search_indexes[${i}]`, "must not be blank");
      else syntax(`search_indexes[${i}]`, t);
    });
    syntax("fingerprint_expression", draft.fingerprintExpression);
    const masks: [string, string][] =
      typeof draft.mask === "string"
        ? [["mask", draft.mask]]
        : Object.entries(draft.mask ?? {}).map(([k, t]) => [`mask.${k}`, t]);
    const budget = checkBudget();
    for (const [field, template] of masks) {
      const before = errors[field]?.length ?? 0;
      syntax(field, template);
      if (given.mask && (errors[field]?.length ?? 0) === before) {
        checkCardExposure(draft.type, field, template, errors, budget);
      }
    }
  }

  /** PCI DSS 3.4.1 for what shows a card: a mask, or an alias id (card-mask.ts). Whoever sets it. */
  function checkCardExposure(
    type: TokenType,
    field: string,
    template: string,
    errors: FieldErrors,
    budget = checkBudget(),
  ): void {
    if (!isCardType(type)) return;
    try {
      if (cardExposure.exposes(type, template, budget)) addError(errors, field, cardExposureProblem(type));
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      addError(errors, field, error.message);
    }
  }

  function timestamp(text: string, errors: FieldErrors): string | null {
    const parsed = parseTimestamp(text);
    if ("iso" in parsed) return parsed.iso;
    addError(errors, "expires_at", parsed.problem);
    return null;
  }

  function checkedData(type: TokenType, data: unknown, errors: FieldErrors): unknown {
    if (nestsDeeperThan(data, MAX_BODY_DEPTH)) {
      addError(errors, "data", `must not nest deeper than ${MAX_BODY_DEPTH} levels`);
      return undefined;
    }
    const result = validateTokenData(type, data);
    if ("errors" in result) {
      Object.assign(errors, result.errors);
      return undefined;
    }
    if (Buffer.byteLength(JSON.stringify(result.data), "utf8") > MAX_DATA_BYTES) {
      addError(errors, "data", `must be at most ${MAX_DATA_BYTES} bytes as JSON`);
    }
    return result.data;
  }

  function decideOrNotFound(principal: Principal, permission: TokenPermission, token: TokenRecord): Decision {
    const decision = decide(principal.application, permission, token.containers);
    // Outside every rule for the permission is the same as absent: the caller learns nothing (DESIGN §5.4).
    if (decision === undefined) throw AppError.notFound(`Token ${token.id}`);
    return decision;
  }

  function assertMayWrite(
    principal: Principal,
    permission: "token:create" | "token:update",
    containers: readonly string[],
  ) {
    if (!mayWriteInto(principal.application, permission, containers)) {
      throw AppError.forbidden(
        `The Application holds no ${permission} rule for every container of this token.`,
      );
    }
  }

  /**
   * Checks a create and derives everything it stores, without the database: in a bulk tokenize every request is
   * prepared before the transaction opens, which then only looks up duplicates and writes.
   */
  function prepareCreate(principal: Principal, input: CreateTokenInput, writeKey: WriteKeys): PreparedCreate {
    const errors: FieldErrors = {};
    const type = input.type ?? "token";
    const spec = tokenTypeSpec(type);
    const data = checkedData(type, input.data, errors);
    const draft: TokenDraft = {
      type,
      data,
      metadata: input.metadata ?? {},
      searchIndexes: input.searchIndexes ?? spec.defaultSearchIndexes,
      fingerprintExpression: input.fingerprintExpression ?? spec.fingerprintExpression,
      mask: input.mask ?? spec.mask ?? null,
      containers: [...new Set((input.containers ?? [spec.defaultContainer]).map(normalizeContainer))],
      expiresAt: input.expiresAt === undefined ? null : timestamp(input.expiresAt, errors),
    };
    checkDraft(draft, errors, { indexes: input.searchIndexes !== undefined, mask: input.mask !== undefined });
    if (Object.keys(errors).length > 0) throw AppError.validation(errors);
    assertMayWrite(principal, "token:create", draft.containers);

    const id = resolveId(input.id, type, data, errors);
    const derived = derive(draft, writeKey, errors);
    return { draft, derived, id, deduplicate: input.deduplicateToken === true };
  }

  /**
   * Takes the deduplication locks of the prepared creates (tokens/store.ts), all of them before any lookup and in
   * one order, so that two bulk creates holding the same values in different orders cannot deadlock.
   */
  function lockDuplicates(trx: Executor, principal: Principal, prepared: readonly PreparedCreate[]) {
    const keys = prepared
      .filter((p) => p.deduplicate)
      .map((p) => ({ type: p.draft.type, fingerprint: p.derived.fingerprint }));
    return keys.length === 0 ? Promise.resolve() : tokenStore(trx).lockFingerprints(principal.tenantId, keys);
  }

  async function commitCreate(
    trx: Executor,
    run: RunWrite,
    principal: Principal,
    { draft, derived, id, deduplicate }: PreparedCreate,
    writeKey: WriteKeys,
  ): Promise<TokenView> {
    const { type, data } = draft;
    if (deduplicate) {
      // Under the lock taken for this fingerprint: a concurrent create of the same value has committed or waits.
      const existing = await tokenStore(trx).findByFingerprint(
        principal.tenantId,
        type,
        derived.fingerprint,
        now(),
      );
      if (existing !== undefined) {
        const readable = decide(principal.application, "token:read", existing.record.containers);
        await audit.within(
          trx,
          [
            auditEntry(
              principal,
              "token.create",
              { type: "token", id: existing.record.id },
              { rule: readable && ruleOf(readable), details: { type, deduplicated: true } },
            ),
          ],
          run,
        );
        if (readable === undefined)
          return { record: existing.record, deduplicated: true, identityOnly: true };
        return { ...(await showStored(readable, existing)), deduplicated: true };
      }
    }

    const at = now();
    const record: TokenRecord = {
      id: id ?? uuidv7(clock.now().getTime()),
      tenantId: principal.tenantId,
      type,
      fingerprint: derived.fingerprint,
      fingerprintExpression: draft.fingerprintExpression,
      mask: draft.mask,
      searchIndexes: draft.searchIndexes,
      metadata: draft.metadata,
      containers: draft.containers,
      expiresAt: draft.expiresAt,
      createdBy: principal.application.id,
      createdAt: at,
      modifiedBy: null,
      modifiedAt: null,
    };
    try {
      await tokens.insert(
        record,
        sealData(writeKey.data, record.tenantId, record.id, data),
        derived.rows,
        run,
      );
    } catch (error) {
      if (isUniqueViolation(error))
        throw new AppError("conflict", `A token with id ${record.id} already exists.`);
      throw error;
    }
    const decision = decide(principal.application, "token:create", record.containers);
    await audit.within(
      trx,
      [
        auditEntry(
          principal,
          "token.create",
          { type: "token", id: record.id },
          { rule: decision && ruleOf(decision), details: { type, containers: record.containers } },
        ),
      ],
      run,
    );
    // The caller's own data, just sent: shown through its create rule (docs/tokens.md#access-rules-and-transforms).
    return decision === undefined ? { record } : show(decision, { ...record, data });
  }

  /** A caller-chosen id, or an alias expression evaluated against the data (`{{ data | alias_card }}`). */
  function resolveId(
    given: string | undefined,
    type: TokenType,
    data: unknown,
    errors: FieldErrors,
  ): string | undefined {
    if (given === undefined) return undefined;
    let id = given;
    if (given.includes("{{")) {
      // An id is shown to everyone who reaches the token and stored in clear: for a card, no more than a mask.
      checkCardExposure(type, "id", given, errors);
      if (errors.id !== undefined) throw AppError.validation(errors);
      const value = evaluate(given, { data }, "id", errors);
      if (errors.id !== undefined) throw AppError.validation(errors);
      id = typeof value === "string" ? value : JSON.stringify(value ?? "");
    }
    if (
      id.length < ID_LENGTH.min ||
      id.length > ID_LENGTH.max ||
      hasControlCharacter(id) ||
      hasLoneSurrogate(id)
    ) {
      throw AppError.validation({
        id: [
          `must be ${ID_LENGTH.min} to ${ID_LENGTH.max} characters of well-formed text without control characters`,
        ],
      });
    }
    return id;
  }

  /**
   * `token:update` must never amount to `token:read` (issue 15). Masks, search indexes and fingerprint expressions
   * are evaluated over the data, and their results are shown (a mask), searchable (an index: `data:` terms guess
   * at it) or compared (a fingerprint); so changing one is for a caller that may read the token revealed anyway.
   * Moving the token is refused when the caller itself would then see more of it. The caller may update the token,
   * so it knows the token exists: 403, not 404.
   */
  function assertUpdateShowsNothing(
    principal: Principal,
    before: TokenRecord,
    after: Pick<TokenRecord, "mask" | "searchIndexes" | "fingerprintExpression" | "containers">,
  ): void {
    const read = decide(principal.application, "token:read", before.containers);
    if (read?.transform === "reveal") return;
    const spec = tokenTypeSpec(before.type);
    const changed = [
      !isDeepStrictEqual(before.mask, after.mask) && "mask",
      !isDeepStrictEqual(before.searchIndexes, after.searchIndexes) && "search_indexes",
      (before.fingerprintExpression ?? spec.fingerprintExpression) !== after.fingerprintExpression &&
        "fingerprint_expression",
    ].filter((field) => field !== false);
    if (changed.length > 0) {
      throw AppError.forbidden(
        `Changing ${changed.join(", ")} needs token:read through a rule that reveals this token: ` +
          "these expressions are evaluated over its data.",
      );
    }
    const widened = widenedBy(principal.application, before.containers, after.containers);
    if (widened.length > 0) {
      throw AppError.forbidden(
        `Moving this token to these containers would show the Application more of it through ${widened.join(", ")}; ` +
          "that needs token:read through a rule that reveals it.",
      );
    }
  }

  async function findVisible(principal: Principal, id: string, permission: TokenPermission) {
    const stored = await tokens.findById(principal.tenantId, id, now(), principal.versions?.tokens);
    if (stored === undefined) throw AppError.notFound(`Token ${id}`);
    return { stored, decision: decideOrNotFound(principal, permission, stored.record) };
  }

  return {
    async create(principal: Principal, input: CreateTokenInput): Promise<TokenView> {
      const writeKey = await writeKeys(principal.tenantId);
      const prepared = prepareCreate(principal, input, writeKey);
      return store.write(async (trx, run) => {
        await lockDuplicates(trx, principal, [prepared]);
        return commitCreate(trx, run, principal, prepared, writeKey);
      });
    },

    async get(principal: Principal, id: string): Promise<TokenView> {
      const { stored, decision } = await findVisible(principal, id, "token:read");
      const view = await showStored(decision, stored);
      await audit.record([
        auditEntry(principal, "token.read", { type: "token", id }, { rule: ruleOf(decision) }),
      ]);
      return view;
    },

    /**
     * The containers of a token of the caller's tenant, whatever the caller's rules, for POST /access/explain
     * (whose route requires application:read). Read from the row's clear columns: the data is neither opened nor
     * returned. A missing or expired token is a 404, as for every other read.
     */
    async containersOf(principal: Principal, id: string): Promise<readonly string[]> {
      const stored = await tokens.findById(principal.tenantId, id, now(), principal.versions?.tokens);
      if (stored === undefined) throw AppError.notFound(`Token ${id}`);
      return stored.record.containers;
    },

    async update(principal: Principal, id: string, patch: PatchTokenInput): Promise<TokenView> {
      const writeKey = await writeKeys(principal.tenantId);
      const { stored } = await findVisible(principal, id, "token:update");
      const before = stored.record;
      const spec = tokenTypeSpec(before.type);
      const merged = patch.mask === undefined ? before.mask : mergePatch(before.mask, patch.mask);
      const shaping = {
        mask: (isPlainObject(merged) && Object.keys(merged).length === 0
          ? null
          : merged) as MaskExpression | null,
        searchIndexes:
          patch.searchIndexes === undefined
            ? before.searchIndexes
            : (patch.searchIndexes ?? spec.defaultSearchIndexes),
        fingerprintExpression:
          patch.fingerprintExpression === undefined
            ? (before.fingerprintExpression ?? spec.fingerprintExpression)
            : (patch.fingerprintExpression ?? spec.fingerprintExpression),
        containers:
          patch.containers === undefined
            ? before.containers
            : [...new Set(patch.containers.map(normalizeContainer))],
      };
      // The fields that decide what the data shows as. Checked before anything is evaluated over the data: an
      // expression's errors, too, would tell about it.
      assertUpdateShowsNothing(principal, before, shaping);

      const current = await open(stored);
      const errors: FieldErrors = {};
      const data =
        patch.data === undefined
          ? current.data
          : checkedData(current.type, mergePatch(current.data, patch.data), errors);
      const draft: TokenDraft = {
        type: current.type,
        data,
        metadata:
          patch.metadata === undefined
            ? current.metadata
            : ((mergePatch(current.metadata, patch.metadata) ?? {}) as Record<string, string>),
        ...shaping,
        expiresAt:
          patch.expiresAt === undefined
            ? current.expiresAt
            : patch.expiresAt === null
              ? null
              : timestamp(patch.expiresAt, errors),
      };
      checkDraft(draft, errors, {
        indexes: (patch.searchIndexes?.length ?? 0) > 0,
        mask: patch.mask !== undefined,
      });
      if (Object.keys(errors).length > 0) throw AppError.validation(errors);
      if (patch.containers !== undefined) assertMayWrite(principal, "token:update", draft.containers);
      const derived = derive(draft, writeKey, errors);

      const record: TokenRecord = {
        ...before,
        fingerprint: derived.fingerprint,
        fingerprintExpression: draft.fingerprintExpression,
        mask: draft.mask,
        searchIndexes: draft.searchIndexes,
        metadata: draft.metadata,
        containers: draft.containers,
        expiresAt: draft.expiresAt,
        modifiedBy: principal.application.id,
        modifiedAt: now(),
      };
      const sealed = sealData(writeKey.data, record.tenantId, record.id, data);
      const decision = decide(principal.application, "token:update", record.containers);
      const replaced = await store.write(async (trx, run) => {
        if (!(await tokenStore(trx).replace(record, sealed, derived.rows, stored.sealed))) return false;
        await audit.within(
          trx,
          [
            auditEntry(
              principal,
              "token.update",
              { type: "token", id },
              { rule: decision && ruleOf(decision), details: { fields: Object.keys(patch).sort() } },
            ),
          ],
          run,
        );
        return true;
      });
      if (!replaced) {
        throw new AppError("conflict", `Token ${id} was changed or deleted while this update ran; retry it.`);
      }
      // Never through the update rule: the answer shows what a read would, and nothing without token:read.
      const readable = decide(principal.application, "token:read", record.containers);
      return readable === undefined ? { record } : showData(readable, record, data);
    },

    async delete(principal: Principal, id: string): Promise<void> {
      const { decision } = await findVisible(principal, id, "token:delete");
      const deleted = await store.write(async (trx, run) => {
        if (!(await tokenStore(trx).delete(principal.tenantId, id))) return false;
        await audit.within(
          trx,
          [auditEntry(principal, "token.delete", { type: "token", id }, { rule: ruleOf(decision) })],
          run,
        );
        return true;
      });
      if (!deleted) throw AppError.notFound(`Token ${id}`);
    },

    async list(
      principal: Principal,
      filter: { ids: readonly string[]; type?: TokenType; metadata: readonly (readonly [string, string])[] },
      page: PageRequest,
    ): Promise<Page<TokenView>> {
      const readablePaths = ruleContainers(principal.application, "token:read");
      const { items, total } = await tokens.list(principal.tenantId, {
        ids: filter.ids,
        ...(filter.type !== undefined && { type: filter.type }),
        metadata: filter.metadata.map(([k, v]) => [k, foldCase(v)] as const),
        readablePaths,
        now: now(),
        offset: offsetOf(page),
        limit: page.size,
      });
      const decided = items.map((stored) => ({
        stored,
        record: stored.record,
        decision: decideOrNotFound(principal, "token:read", stored.record),
      }));
      const views = await Promise.all(decided.map((d) => showStored(d.decision, d.stored)));
      await audit.record([
        auditEntry(
          principal,
          "token.list",
          { type: "token", id: null },
          { details: { page: page.page, size: page.size, total, tokens: shownTokens(decided) } },
        ),
      ]);
      return toPage(views, total, page);
    },

    /**
     * Search (spec §4.1): parsed and checked here, compiled to one statement for the page and one for the total,
     * both holding the caller's visibility, so pages are full and totals exact.
     */
    async search(principal: Principal, query: string, page: PageRequest): Promise<Page<TokenView>> {
      const { predicate, shape } = parseSearch(query);
      const visiblePaths = ruleContainers(principal.application, "token:search");
      const indexKey = (await keys.current(principal.tenantId, "index")).key;
      const { items, total } = await tokens.search(
        predicate,
        {
          tenantId: principal.tenantId,
          now: now(),
          visiblePaths,
          blind: (value) => blindIndex(indexKey, value),
        },
        { offset: offsetOf(page), limit: page.size },
      );
      const rules = effectiveRules(principal.application);
      const shown = items.map((stored) => {
        const decision = decideAmong(rules, "token:search", stored.record.containers);
        // The statement already holds the caller's rules; a row it returns must have a deciding rule.
        if (decision === undefined)
          throw new Error(`search returned token ${stored.record.id} it may not show`);
        return { stored, record: stored.record, decision };
      });
      // Only what will be shown is decrypted: a redacted token's data is never opened.
      const withData = shown.filter(({ decision, record }) => showsData(decision, record));
      const dataKey = await dataKeys(
        principal.tenantId,
        withData.map((s) => s.stored),
      );
      const views = shown.map(({ stored: { record, sealed }, decision }) =>
        showsData(decision, record)
          ? showData(
              decision,
              record,
              openData(dataKey.get(sealed.keyVersion)!, record.tenantId, record.id, sealed),
            )
          : { record },
      );
      await audit.record([
        auditEntry(
          principal,
          "token.search",
          { type: "token", id: null },
          { details: { query: shape, page: page.page, size: page.size, total, tokens: shownTokens(shown) } },
        ),
      ]);
      return toPage(views, total, page);
    },

    /**
     * Bulk create keeping the request's shape (wire-format §4.3): an object with `type` is a token request,
     * any other leaf becomes a `token` token. One transaction: all or nothing.
     */
    async tokenize(
      principal: Principal,
      body: unknown,
      io: {
        /** Validates one token request found in the body (the route owns the schema). */
        parse: (node: unknown, at: string) => CreateTokenInput;
        /** Renders a created token where its request stood. */
        present: (view: TokenView) => unknown;
      },
    ): Promise<unknown> {
      const requests: { at: string; input: CreateTokenInput; primitive: boolean }[] = [];
      const problems: FieldErrors = {};
      const plan = (node: unknown, at: string): unknown => {
        if (Array.isArray(node)) return node.map((item, i) => plan(item, `${at}[${i}]`));
        if (isPlainObject(node)) {
          if (typeof node.type === "string") {
            try {
              requests.push({ at, input: io.parse(node, at), primitive: false });
            } catch (error) {
              if (!(error instanceof AppError) || error.errors === undefined) throw error;
              Object.assign(problems, error.errors);
              return null;
            }
            return requests.length - 1;
          }
          return Object.fromEntries(
            Object.entries(node).map(([k, v]) => [k, plan(v, at === "" ? k : `${at}.${k}`)]),
          );
        }
        if (node === null) return null;
        requests.push({ at, input: { type: "token", data: node }, primitive: true });
        return requests.length - 1;
      };
      if (body === undefined) throw AppError.validation({ body: ["is required"] });
      if (nestsDeeperThan(body, MAX_BODY_DEPTH)) {
        throw AppError.validation({ body: [`must not nest deeper than ${MAX_BODY_DEPTH} levels`] });
      }
      const shape = plan(body, "");
      if (Object.keys(problems).length > 0) throw AppError.validation(problems);
      if (requests.length > MAX_TOKENIZE_ITEMS) {
        throw AppError.validation({ body: [`must hold at most ${MAX_TOKENIZE_ITEMS} values to tokenize`] });
      }
      const writeKey = await writeKeys(principal.tenantId);
      // A request's problems are keyed by where it stands in the body.
      const located = (error: unknown, at: string) =>
        error instanceof AppError && error.errors !== undefined
          ? AppError.validation(prefix(error.errors, at), error.detail)
          : error;
      const prepared = requests.map(({ at, input }) => {
        try {
          return prepareCreate(principal, input, writeKey);
        } catch (error) {
          throw located(error, at);
        }
      });
      const views = await store.write(async (trx, run) => {
        await lockDuplicates(trx, principal, prepared);
        const created: TokenView[] = [];
        for (const [i, request] of prepared.entries()) {
          try {
            created.push(await commitCreate(trx, run, principal, request, writeKey));
          } catch (error) {
            throw located(error, requests[i]!.at);
          }
        }
        return created;
      });
      const fill = (node: unknown): unknown => {
        if (typeof node === "number") {
          const request = requests[node]!;
          const view = views[node]!;
          return request.primitive ? view.record.id : io.present(view);
        }
        if (Array.isArray(node)) return node.map(fill);
        if (isPlainObject(node))
          return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, fill(v)]));
        return node;
      };
      return fill(shape);
    },

    /**
     * Replaces `{{ <id> }}` anywhere in the body with the data the caller may read (wire-format §4.3). A string
     * that is exactly one expression becomes the data itself; inside a longer string it is interpolated.
     * `permission` is `token:read` for POST /detokenize and `token:use` for a reactor's args (DESIGN §8).
     */
    async detokenize(
      principal: Principal,
      body: unknown,
      permission: "token:read" | "token:use" = "token:read",
      /** Whose use this is in the audit log: a reactor's invocation records itself with the tokens it used. */
      recordAs:
        { action: "reactor.react" | "reactor.react_async"; reactorId: string } | undefined = undefined,
    ): Promise<unknown> {
      const ids = new Set<string>();
      const unsupported = new Set<string>();
      const collect = (node: unknown): void => {
        if (typeof node === "string") {
          for (const [whole, inner] of node.matchAll(ANY_EXPRESSION)) {
            const id = inner!.trim();
            if (/^[^\s{}|]+$/.test(id) && !hasControlCharacter(id)) ids.add(id);
            else unsupported.add(whole);
          }
        } else if (Array.isArray(node)) node.forEach(collect);
        else if (isPlainObject(node)) Object.values(node).forEach(collect);
      };
      if (body === undefined) throw AppError.validation({ body: ["is required"] });
      if (nestsDeeperThan(body, MAX_BODY_DEPTH)) {
        throw AppError.validation({ body: [`must not nest deeper than ${MAX_BODY_DEPTH} levels`] });
      }
      collect(body);
      if (unsupported.size > 0) {
        throw AppError.validation({
          body: [...unsupported].map((e) => `${e} is not supported: detokenize takes {{ <token id> }} only`),
        });
      }
      if (ids.size > MAX_DETOKENIZE_TOKENS) {
        throw AppError.validation({ body: [`may reference at most ${MAX_DETOKENIZE_TOKENS} tokens`] });
      }
      const found = await tokens.findManyByIds(
        principal.tenantId,
        [...ids],
        now(),
        principal.versions?.tokens,
      );
      const byId = new Map(found.map((t) => [t.record.id, t]));
      const missing = [...ids].filter((id) => !byId.has(id));
      if (missing.length > 0) {
        throw AppError.validation({ body: missing.map((id) => `token ${id} does not exist`) });
      }
      const values = new Map<string, unknown>();
      const used: { record: TokenRecord; decision: Decision }[] = [];
      for (const stored of found) {
        const decision = decide(principal.application, permission, stored.record.containers);
        if (decision === undefined) {
          const verb = permission === "token:read" ? "read" : "use";
          throw AppError.forbidden(`The Application may not ${verb} token ${stored.record.id}.`);
        }
        const view = await showStored(decision, stored);
        if (view.shown === undefined) {
          throw AppError.forbidden(
            `The Application's rule shows no data of token ${stored.record.id} (it redacts it, or masks it and the token has no mask).`,
          );
        }
        values.set(stored.record.id, view.shown.value);
        used.push({ record: stored.record, decision });
      }
      await audit.record([
        recordAs === undefined
          ? auditEntry(
              principal,
              "token.detokenize",
              { type: "token", id: null },
              { details: { tokens: shownTokens(used) } },
            )
          : auditEntry(
              principal,
              recordAs.action,
              { type: "reactor", id: recordAs.reactorId },
              { details: { tokens: shownTokens(used) } },
            ),
      ]);
      const replace = (node: unknown): unknown => {
        if (typeof node === "string") {
          const whole = WHOLE_EXPRESSION.exec(node);
          if (whole) return values.get(whole[1]!);
          return node.replace(EXPRESSION, (_m, id: string) => {
            const value = values.get(id);
            return typeof value === "string" ? value : JSON.stringify(value);
          });
        }
        if (Array.isArray(node)) return node.map(replace);
        if (isPlainObject(node))
          return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, replace(v)]));
        return node;
      };
      return replace(body);
    },

    /** Deletes expired tokens; they were invisible from the moment they expired. */
    sweepExpired(): Promise<number> {
      return tokens.deleteExpired(now());
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;

const ANY_EXPRESSION = /\{\{([^{}]*)\}\}/g;
const EXPRESSION = /\{\{\s*([^\s{}|]+)\s*\}\}/g;
const WHOLE_EXPRESSION = /^\s*\{\{\s*([^\s{}|]+)\s*\}\}\s*$/;

function prefix(errors: FieldErrors, at: string): FieldErrors {
  if (at === "") return errors;
  return Object.fromEntries(Object.entries(errors).map(([k, v]) => [k === "body" ? at : `${at}.${k}`, v]));
}
