import { normalizeContainer, containerProblem } from "../access/rules.js";
import type { TokenSubject } from "../access/decide.js";
import { blindIndex, fingerprintOf, foldCase } from "../crypto/blind-index.js";
import { nestsDeeperThan } from "../json/depth.js";
import { isPlainObject, mergePatch } from "../json/merge-patch.js";
import type { VersionedKey } from "../keys/tenant-keys.js";
import { AppError, addError, type FieldErrors } from "../server/errors.js";
import { hasControlCharacter, hasLoneSurrogate, parseTimestamp } from "../shared/text.js";
import {
  cardExposureProblem,
  checkBudget,
  createCardExposureCheck,
  isCardType,
  type CheckBudget,
} from "./card-mask.js";
import { ExpressionError, type ExpressionEngine, type ExpressionScope } from "./expressions.js";
import { MAX_METADATA_ENTRIES } from "./schemas.js";
import { tokenTypeSpec, validateTokenData, type TokenType } from "./token-types.js";
import type { MaskExpression, TokenIndexRows, TokenRecord } from "./types.js";

/** Serialized token data above this is refused: a vault holds secrets, not documents. */
export const MAX_DATA_BYTES = 32 * 1024;
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

/** The tenant's keys a write derives with: data sealing, fingerprints, blind indexes. */
export interface WriteKeys {
  readonly data: VersionedKey;
  readonly fingerprint: Buffer;
  readonly index: Buffer;
}

/** The fields every write recomputes from: the request on create, the patched token on update. */
export interface TokenDraft {
  readonly type: TokenType;
  readonly data: unknown;
  readonly metadata: Readonly<Record<string, string>>;
  readonly searchIndexes: readonly string[];
  readonly fingerprintExpression: string;
  readonly mask: MaskExpression | null;
  readonly containers: readonly string[];
  readonly expiresAt: string | null;
}

/** The fields of an update that decide what the data shows as (checked before the data is opened). */
export type Shaping = Pick<TokenDraft, "mask" | "searchIndexes" | "fingerprintExpression" | "containers">;

export interface Derived {
  readonly fingerprint: string;
  readonly rows: TokenIndexRows;
}

/** A create checked and derived in full, before its transaction: all that is left is to look and to write. */
export interface PreparedCreate {
  readonly draft: TokenDraft;
  readonly derived: Derived;
  readonly id: string | undefined;
  /**
   * What the create is decided on (a session's `id` conditions): the id the caller wrote, when it wrote one that
   * is not an alias. A generated id or an alias is not known when access is checked, so it is never decided on,
   * neither then nor for the answer's transform.
   */
  readonly subject: TokenSubject;
  readonly deduplicate: boolean;
}

/** What a write stores of a draft beside its data: the fields a create sets and an update replaces. */
export function recordFields(
  draft: TokenDraft,
  derived: Derived,
): Pick<
  TokenRecord,
  "fingerprint" | "fingerprintExpression" | "mask" | "searchIndexes" | "metadata" | "containers" | "expiresAt"
> {
  return {
    fingerprint: derived.fingerprint,
    fingerprintExpression: draft.fingerprintExpression,
    mask: draft.mask,
    searchIndexes: draft.searchIndexes,
    metadata: draft.metadata,
    containers: draft.containers,
    expiresAt: draft.expiresAt,
  };
}

/**
 * The pure half of a token write: field checks, expressions (search indexes, fingerprint, mask, alias ids) and
 * what is derived from them, without a database. Every check adds to one FieldErrors, so that a request learns
 * of all its problems in one 400.
 */
export function createDrafts({ expressions, now }: { expressions: ExpressionEngine; now: () => string }) {
  const cardExposure = createCardExposureCheck(expressions);

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

  /** PCI DSS 3.4.1 for what shows a card: a mask, or an alias id (card-mask.ts). Whoever sets it. */
  function checkCardExposure(
    type: TokenType,
    field: string,
    template: string,
    errors: FieldErrors,
    budget: CheckBudget = checkBudget(),
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
    if (Object.keys(errors).length > 0) throw AppError.validation(errors);
  }

  /** Evaluates a checked draft's expressions and derives what is stored beside it; throws one 400 with them all. */
  function derive(draft: TokenDraft, keys: WriteKeys, errors: FieldErrors = {}): Derived {
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
      blindValues.push(blindIndex(keys.index, String(value)));
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
      fingerprint: fingerprintOf(keys.fingerprint, text),
      rows: {
        blindValues,
        containers: draft.containers,
        metadata: Object.entries(draft.metadata).map(([k, v]) => [k, foldCase(v)] as const),
      },
    };
  }

  /** A caller-chosen id, or an alias expression evaluated against the data (`{{ data | alias_card }}`). */
  function resolveId(given: string | undefined, type: TokenType, data: unknown): string | undefined {
    if (given === undefined) return undefined;
    const errors: FieldErrors = {};
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

  return {
    /**
     * What a mask shows of `data`, or undefined when it no longer fits the data (changed by an update): the
     * access transform then shows nothing.
     */
    masked(mask: MaskExpression, data: unknown): { value: unknown } | undefined {
      const errors: FieldErrors = {};
      const value = evaluateMask(mask, data, errors);
      return Object.keys(errors).length > 0 ? undefined : { value };
    },

    /**
     * Checks a create and derives everything it stores, without the database: in a bulk tokenize every request
     * is prepared before the transaction opens, which then only looks up duplicates and writes. `mayWrite` is
     * the caller's access check on the draft's containers, run once the fields are known to be valid.
     */
    prepareCreate(
      input: CreateTokenInput,
      keys: WriteKeys,
      mayWrite: (token: TokenSubject) => void,
    ): PreparedCreate {
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
      checkDraft(draft, errors, {
        indexes: input.searchIndexes !== undefined,
        mask: input.mask !== undefined,
      });
      const chosen = input.id !== undefined && !input.id.includes("{{") ? input.id : undefined;
      const subject: TokenSubject = {
        ...(chosen !== undefined && { id: chosen }),
        containers: draft.containers,
      };
      mayWrite(subject);
      const id = resolveId(input.id, type, data);
      return {
        draft,
        derived: derive(draft, keys),
        id,
        subject,
        deduplicate: input.deduplicateToken === true,
      };
    },

    /** The fields of `patch` that decide what the data shows as, over the token as it is. */
    shapingOf(before: TokenRecord, patch: PatchTokenInput): Shaping {
      const spec = tokenTypeSpec(before.type);
      const merged = patch.mask === undefined ? before.mask : mergePatch(before.mask, patch.mask);
      return {
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
    },

    /** The token `current` (opened) with `patch` applied, checked; throws one 400 with every problem. */
    patched(
      current: TokenRecord & { readonly data: unknown },
      patch: PatchTokenInput,
      shaping: Shaping,
    ): TokenDraft {
      const errors: FieldErrors = {};
      const draft: TokenDraft = {
        type: current.type,
        data:
          patch.data === undefined
            ? current.data
            : checkedData(current.type, mergePatch(current.data, patch.data), errors),
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
      return draft;
    },

    derive,
  };
}

export type Drafts = ReturnType<typeof createDrafts>;
