import { ROOT } from "../access/decide.js";
import {
  containerProblem,
  DOT_SEGMENT_PROBLEM,
  normalizeContainer,
  type Condition,
} from "../access/rules.js";
import { foldCase } from "../crypto/blind-index.js";
import type { QueryNode, RangeNode, TermNode } from "./ast.js";
import { boundInstant, dateProblem, pointInterval, type Interval } from "./dates.js";
import { METADATA_PREFIX, QueryError } from "./parser.js";

/**
 * What a query means, independent of any SQL: every value checked and normalised (folded, lower-cased,
 * turned into millisecond intervals). The compiler and the test's reference evaluator both start from here.
 */
export type Predicate =
  | { readonly kind: "and" | "or"; readonly children: readonly Predicate[] }
  | { readonly kind: "not"; readonly child: Predicate }
  | { readonly kind: "equals"; readonly column: EqualsColumn; readonly value: string }
  | ({ readonly kind: "during"; readonly column: DateColumn } & Interval)
  /** `value` as written; the compiler turns it into its blind index, which folds case (crypto/blind-index.ts). */
  | { readonly kind: "data"; readonly value: string }
  | { readonly kind: "metadata"; readonly key: string; readonly value: string }
  /** `subtree`: the path and everything below it (`"/pci/*"`); otherwise exactly that container. */
  | { readonly kind: "container"; readonly path: string; readonly subtree: boolean }
  /** `container:"/*"`: every token has a container under the root. */
  | { readonly kind: "everything" }
  /** The column's value begins with `value` (a session's `id starts_with` condition; no query term makes one). */
  | { readonly kind: "prefix"; readonly column: "id"; readonly value: string };

export type EqualsColumn = "id" | "type" | "fingerprint" | "created_by" | "modified_by";
export type DateColumn = "created_at" | "modified_at";

export interface PredicateOptions {
  /** The token types there are; `type:` names one of them. */
  readonly types: readonly string[];
}

const WILDCARD_PROBLEM =
  'wildcards are only allowed at the end of a quoted container, as in container:"/pci/*"';
const UNQUOTED_STAR_PROBLEM =
  'wildcards are only allowed at the end of a quoted container, as in container:"/pci/*"; ' +
  'quote the value to search for a literal *, as in data:"12*34"';

export function toPredicate(node: QueryNode, options: PredicateOptions): Predicate {
  switch (node.kind) {
    case "and":
    case "or":
      return { kind: node.kind, children: node.children.map((child) => toPredicate(child, options)) };
    case "not":
      return { kind: "not", child: toPredicate(node.child, options) };
    case "range":
      return rangePredicate(node);
    case "term":
      return termPredicate(node, options);
  }
}

function termPredicate(term: TermNode, options: PredicateOptions): Predicate {
  const { field, value, valueOffset } = term;
  if (field === "container") return containerPredicate(term);
  // Only a container takes a wildcard. Inside quotes any other field's `*` is the character itself (metadata
  // values, ids and search-index values may hold one); bare, it would read as a wildcard that is not there.
  if (!term.quoted && value.includes("*")) {
    throw new QueryError(UNQUOTED_STAR_PROBLEM, charOffset(term, value.indexOf("*")));
  }
  if (field.startsWith(METADATA_PREFIX)) {
    return { kind: "metadata", key: field.slice(METADATA_PREFIX.length), value: foldCase(value) };
  }
  switch (field) {
    case "data":
      return { kind: "data", value };
    case "created_at":
    case "modified_at": {
      const problem = dateProblem(value);
      if (problem !== undefined) throw new QueryError(problem, valueOffset);
      return { kind: "during", column: field, ...pointInterval(value) };
    }
    case "type":
      if (!options.types.includes(value)) {
        // Named back only when it reads as a type name: a value typed after `type:` by mistake is not quoted.
        const named = /^[A-Za-z_]{1,64}$/.test(value) ? ` '${value}'` : "";
        throw new QueryError(`unknown token type${named}; one of ${options.types.join(", ")}`, valueOffset);
      }
      return { kind: "equals", column: "type", value };
    case "id":
    case "fingerprint":
    case "created_by":
    case "modified_by":
      return { kind: "equals", column: field, value };
    default:
      // The parser admits no other field; reaching this is a bug, not a bad query.
      throw new Error(`unhandled search field ${field}`);
  }
}

function containerPredicate(term: TermNode): Predicate {
  const star = term.value.indexOf("*");
  const subtree = term.quoted && star === term.value.length - 1;
  if (star !== -1 && !subtree) throw new QueryError(WILDCARD_PROBLEM, charOffset(term, star));
  const path = normalizeContainer(subtree ? term.value.slice(0, -1) : term.value);
  const problem = containerProblem(path);
  if (problem === DOT_SEGMENT_PROBLEM) {
    // Containers are stored as written: a dot segment names no container anyone could have created.
    throw new QueryError(`'${term.value}' ${DOT_SEGMENT_PROBLEM}`, term.valueOffset);
  }
  if (problem !== undefined) {
    throw new QueryError(
      `'${term.value}' is not a container like /pci/high/, or a subtree like "/pci/*"`,
      term.valueOffset,
    );
  }
  return subtree && path === "/" ? { kind: "everything" } : { kind: "container", path, subtree };
}

/** Where the value's `index`-th character stands in the query (past the opening quote; escapes aside). */
function charOffset(term: TermNode, index: number): number {
  return term.valueOffset + (term.quoted ? 1 : 0) + index;
}

function rangePredicate(range: RangeNode): Predicate {
  for (const bound of [range.lower, range.upper]) {
    const problem = bound && dateProblem(bound.text);
    if (problem !== undefined) throw new QueryError(problem, bound!.offset);
  }
  const { lower, upper } = range;
  return {
    kind: "during",
    column: range.field as DateColumn,
    ...(lower !== undefined && { from: boundInstant(lower.text, "lower", lower.inclusive) }),
    ...(upper !== undefined && { to: boundInstant(upper.text, "upper", upper.inclusive) }),
  };
}

/** A filter of `GET /v2/tokens` that names nothing a token could hold; `field` is the query parameter. */
export class FilterError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = "FilterError";
  }
}

/** The filters of `GET /v2/tokens` (wire-format §4.3); `metadata` pairs must all match. */
export interface TokenFilter {
  readonly type?: string;
  readonly container?: string;
  readonly fingerprint?: string;
  readonly metadata?: Readonly<Record<string, string>>;
}

/**
 * The v2 list's filters as the predicate the query language would give, ANDed: the list is a search whose query
 * is built from parameters, never from text, so no value can be read as syntax. A container includes its
 * sub-containers, as in Basis Theory's v2 (`container:"/pci/*"`); metadata is matched as search matches it
 * (exact, case-insensitive).
 */
export function filterPredicate(filter: TokenFilter, options: PredicateOptions): Predicate | undefined {
  const terms: Predicate[] = [];
  if (filter.type !== undefined) {
    if (!options.types.includes(filter.type)) {
      throw new FilterError("type", `unknown token type; one of ${options.types.join(", ")}`);
    }
    terms.push({ kind: "equals", column: "type", value: filter.type });
  }
  if (filter.container !== undefined) {
    const path = normalizeContainer(filter.container);
    const problem = containerProblem(path);
    if (problem !== undefined) throw new FilterError("container", problem);
    if (path !== "/") terms.push({ kind: "container", path, subtree: true });
  }
  if (filter.fingerprint !== undefined) {
    terms.push({ kind: "equals", column: "fingerprint", value: filter.fingerprint });
  }
  for (const [key, value] of Object.entries(filter.metadata ?? {})) {
    terms.push({ kind: "metadata", key, value: foldCase(value) });
  }
  return terms.length === 0 ? undefined : terms.length === 1 ? terms[0] : { kind: "and", children: terms };
}

/**
 * A session's condition rules (access/decide.ts reachOf) as one predicate: at least one rule with every condition
 * holding, with the meaning access/decide.ts conditionHolds gives them. ANDed to the query, it makes the search
 * return exactly the tokens the session's rules reach.
 */
export function conditionsPredicate(alternatives: readonly (readonly Condition[])[]): Predicate {
  return {
    kind: "or",
    children: alternatives.map((all) => ({ kind: "and", children: all.map(conditionPredicate) })),
  };
}

function conditionPredicate(condition: Condition): Predicate {
  if (condition.attribute === "id") {
    return condition.operator === "equals"
      ? { kind: "equals", column: "id", value: condition.value }
      : { kind: "prefix", column: "id", value: condition.value };
  }
  const path = normalizeContainer(condition.value);
  if (condition.operator === "equals") return { kind: "container", path, subtree: false };
  return path === ROOT ? { kind: "everything" } : { kind: "container", path, subtree: true };
}
