/**
 * The parse tree of a search query (spec §4.1, DESIGN §7). Every node carries the offset of its first character
 * in the query text, so that a problem found after parsing (an unknown type, a bad date) still points at its place.
 */
export type QueryNode = AndNode | OrNode | NotNode | TermNode | RangeNode;

export interface AndNode {
  readonly kind: "and";
  readonly offset: number;
  readonly children: readonly QueryNode[];
}

export interface OrNode {
  readonly kind: "or";
  readonly offset: number;
  readonly children: readonly QueryNode[];
}

export interface NotNode {
  readonly kind: "not";
  readonly offset: number;
  readonly child: QueryNode;
}

/** `field:value`; `quoted` matters only for containers, where a trailing `*` inside quotes means a subtree. */
export interface TermNode {
  readonly kind: "term";
  readonly offset: number;
  readonly field: string;
  readonly value: string;
  readonly quoted: boolean;
  /** Where the value starts, for problems about the value rather than the field. */
  readonly valueOffset: number;
}

/** `field:[lower TO upper]`; a bound of `undefined` is `*`, an open side. */
export interface RangeNode {
  readonly kind: "range";
  readonly offset: number;
  readonly field: string;
  readonly lower: Bound | undefined;
  readonly upper: Bound | undefined;
}

export interface Bound {
  readonly text: string;
  readonly offset: number;
  readonly inclusive: boolean;
}
