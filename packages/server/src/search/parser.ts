import type { Bound, QueryNode, TermNode } from "./ast.js";

/** Limits of DESIGN §7: they bound the work a query can cause, whoever sends it. */
export const MAX_QUERY_BYTES = 4096;
export const MAX_TERMS = 64;
export const MAX_NESTING = 16;

/** A query that cannot be searched; `offset` is where in the query text the problem is. */
export class QueryError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = "QueryError";
  }
}

const FIELDS = new Set([
  "id",
  "type",
  "data",
  "fingerprint",
  "container",
  "created_by",
  "created_at",
  "modified_by",
  "modified_at",
]);
export const METADATA_PREFIX = "metadata.";
export const DATE_FIELDS = new Set(["created_at", "modified_at"]);

const WHITESPACE = /\s/;
/** Characters that end a bare word: whitespace, grouping and quoting. */
const isDelimiter = (c: string | undefined) =>
  c === undefined || WHITESPACE.test(c) || c === "(" || c === ")" || c === '"';

/**
 * Parses the query language of spec §4.1 with the grammar of DESIGN §7 (precedence NOT > AND > OR; adjacent
 * terms are ANDed). Keywords are case-sensitive: `and` is a word like any other. An empty query is `undefined`:
 * it matches every token the caller may search.
 */
export function parseQuery(text: string): QueryNode | undefined {
  if (Buffer.byteLength(text, "utf8") > MAX_QUERY_BYTES) {
    throw new QueryError(`is longer than ${MAX_QUERY_BYTES} bytes`, MAX_QUERY_BYTES);
  }
  // Nothing stored holds these, and PostgreSQL text cannot hold NUL at all; refusing them keeps both stores alike.
  const unusable = unusableCharacterAt(text);
  if (unusable !== -1) throw new QueryError("holds a control character or a lone surrogate", unusable);
  return new Parser(text).parse();
}

/**
 * Nothing stored holds control characters (other than the whitespace tab, CR and LF) or lone UTF-16 surrogates,
 * and PostgreSQL text cannot hold NUL at all; refusing them keeps both stores answering alike.
 */
function unusableCharacterAt(text: string): number {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    const control = (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f;
    if (control) return i;
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return i;
      i += 1;
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      return i;
    }
  }
  return -1;
}

class Parser {
  private pos = 0;
  private depth = 0;
  private terms = 0;

  constructor(private readonly text: string) {}

  parse(): QueryNode | undefined {
    this.skipSpace();
    if (this.atEnd()) return undefined;
    const node = this.parseOr();
    this.skipSpace();
    if (this.peek() === ")") throw new QueryError("unbalanced parenthesis: ')' closes nothing", this.pos);
    return node;
  }

  private parseOr(): QueryNode {
    const offset = this.pos;
    const children = [this.parseAnd()];
    for (;;) {
      this.skipSpace();
      if (!this.atKeyword("OR")) break;
      const operator = this.pos;
      this.pos += 2;
      this.expectOperand("OR", operator);
      children.push(this.parseAnd());
    }
    return children.length === 1 ? children[0]! : { kind: "or", offset, children: flatten("or", children) };
  }

  private parseAnd(): QueryNode {
    const offset = this.pos;
    const children = [this.parseUnary()];
    for (;;) {
      this.skipSpace();
      if (this.atEnd() || this.peek() === ")" || this.atKeyword("OR")) break;
      if (this.atKeyword("AND")) {
        const operator = this.pos;
        this.pos += 3;
        this.expectOperand("AND", operator);
      }
      children.push(this.parseUnary());
    }
    return children.length === 1 ? children[0]! : { kind: "and", offset, children: flatten("and", children) };
  }

  private parseUnary(): QueryNode {
    this.skipSpace();
    const offset = this.pos;
    const c = this.peek();
    const not = this.atKeyword("NOT") ? 3 : c === "!" || c === "-" ? 1 : 0;
    if (not > 0) {
      const operator = this.text.slice(this.pos, this.pos + not);
      this.pos += not;
      this.expectOperand(operator, offset);
      const child = this.parseUnary();
      // NOT NOT x is x; collapsing keeps the tree (and the SQL) shallow however many are written.
      return child.kind === "not" ? child.child : { kind: "not", offset, child };
    }
    if (c === "(") {
      if (this.depth === MAX_NESTING) {
        throw new QueryError(`nests parentheses deeper than ${MAX_NESTING} levels`, offset);
      }
      this.depth += 1;
      this.pos += 1;
      this.skipSpace();
      if (this.peek() === ")") throw new QueryError("empty parentheses", offset);
      if (this.atEnd()) throw new QueryError("unbalanced parenthesis: '(' is never closed", offset);
      const inner = this.parseOr();
      this.skipSpace();
      if (this.peek() !== ")") throw new QueryError("unbalanced parenthesis: '(' is never closed", offset);
      this.pos += 1;
      this.depth -= 1;
      return inner;
    }
    if (c === ")") throw new QueryError("unbalanced parenthesis: ')' closes nothing", offset);
    for (const keyword of ["AND", "OR"]) {
      if (this.atKeyword(keyword)) throw new QueryError(`${keyword} has no term before it`, offset);
    }
    return this.parseTerm();
  }

  private parseTerm(): QueryNode {
    const offset = this.pos;
    this.terms += 1;
    if (this.terms > MAX_TERMS) throw new QueryError(`has more than ${MAX_TERMS} terms`, offset);
    while (!this.atEnd() && !isDelimiter(this.peek()) && this.peek() !== ":") this.pos += 1;
    const field = this.text.slice(offset, this.pos);
    if (field === "") {
      throw new QueryError(`expected a term like type:token, found '${this.peek() ?? ""}'`, offset);
    }
    if (this.peek() !== ":") {
      // A word without a field is most often a value typed alone (a card number): it is not quoted back.
      throw new QueryError("expected field:value, found a word without a ':'", offset);
    }
    checkField(field, offset);
    this.pos += 1;
    const valueOffset = this.pos;
    const c = this.peek();
    if (c === "[" || c === "{") {
      if (!DATE_FIELDS.has(field)) {
        throw new QueryError(
          `ranges are only allowed on created_at and modified_at, not on ${field}`,
          offset,
        );
      }
      return this.parseRange(field, offset);
    }
    let value: string;
    let quoted = false;
    if (c === '"') {
      value = this.parseQuoted();
      quoted = true;
    } else {
      while (!isDelimiter(this.peek())) this.pos += 1;
      value = this.text.slice(valueOffset, this.pos);
    }
    if (value === "") throw new QueryError(`${field} has an empty value`, valueOffset);
    if (!isDelimiter(this.peek())) {
      throw new QueryError(`expected a space or ')' after the value of ${field}`, this.pos);
    }
    const term: TermNode = { kind: "term", offset, field, value, quoted, valueOffset };
    return term;
  }

  /** `"…"` with `\` escaping the next character, as in Lucene. */
  private parseQuoted(): string {
    const start = this.pos;
    this.pos += 1;
    let value = "";
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new QueryError("unterminated quoted value", start);
      this.pos += 1;
      if (c === '"') return value;
      if (c === "\\") {
        const next = this.peek();
        if (next === undefined) throw new QueryError("unterminated quoted value", start);
        value += next;
        this.pos += 1;
      } else {
        value += c;
      }
    }
  }

  private parseRange(field: string, offset: number): QueryNode {
    const lowerInclusive = this.peek() === "[";
    this.pos += 1;
    const lower = this.parseBound(lowerInclusive, offset);
    this.skipSpace();
    if (!this.atKeyword("TO")) {
      throw new QueryError(`expected TO in the range of ${field}`, this.atEnd() ? offset : this.pos);
    }
    this.pos += 2;
    if (this.atEnd()) throw new QueryError("range is never closed with ']' or '}'", offset);
    const upperStart = this.pos;
    this.skipSpace();
    if (this.pos === upperStart) throw new QueryError("expected a space after TO", this.pos);
    // Whether the upper bound is inclusive is only known at its closing bracket.
    const upper = this.parseBound(true, offset);
    this.skipSpace();
    const close = this.peek();
    if (close !== "]" && close !== "}") {
      throw new QueryError(`range of ${field} is never closed with ']' or '}'`, offset);
    }
    this.pos += 1;
    if (!isDelimiter(this.peek())) {
      throw new QueryError(`expected a space or ')' after the range of ${field}`, this.pos);
    }
    return {
      kind: "range",
      offset,
      field,
      lower,
      upper: upper && { ...upper, inclusive: close === "]" },
    };
  }

  /** A bound is `*` (open) or a date; dates hold ':' and are never quoted (wire-format §4.4). */
  private parseBound(inclusive: boolean, rangeOffset: number): Bound | undefined {
    this.skipSpace();
    const offset = this.pos;
    while (!this.atEnd() && !WHITESPACE.test(this.peek()!) && !"[]{}()".includes(this.peek()!)) this.pos += 1;
    const text = this.text.slice(offset, this.pos);
    if (text === "") {
      throw new QueryError("expected a date or * as a range bound", this.atEnd() ? rangeOffset : offset);
    }
    if (!this.atEnd() && !WHITESPACE.test(this.peek()!) && !"]}".includes(this.peek()!)) {
      throw new QueryError(`unexpected '${this.peek()!}' in a range`, this.pos);
    }
    if (this.atEnd()) throw new QueryError("range is never closed with ']' or '}'", rangeOffset);
    return text === "*" ? undefined : { text, offset, inclusive };
  }

  /** After an operator: something to operate on must follow. */
  private expectOperand(operator: string, offset: number): void {
    this.skipSpace();
    if (this.atEnd() || this.peek() === ")" || this.atKeyword("AND") || this.atKeyword("OR")) {
      throw new QueryError(`${operator} has no term after it`, offset);
    }
  }

  /** A keyword is a whole word: `ORDER:x` and `AND:x` are (unknown) fields, not operators. */
  private atKeyword(keyword: string): boolean {
    if (!this.text.startsWith(keyword, this.pos)) return false;
    const after = this.text[this.pos + keyword.length];
    return after === undefined || WHITESPACE.test(after) || after === "(" || after === ")" || after === '"';
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private atEnd(): boolean {
    return this.pos >= this.text.length;
  }

  private skipSpace(): void {
    while (!this.atEnd() && WHITESPACE.test(this.peek()!)) this.pos += 1;
  }
}

function checkField(field: string, offset: number): void {
  if (FIELDS.has(field)) return;
  if (field.startsWith(METADATA_PREFIX)) {
    if (field.length > METADATA_PREFIX.length) return;
    throw new QueryError("metadata needs a key, as in metadata.region:eu", offset);
  }
  // Named back only when it reads as a field name: anything else before a ':' may be a value.
  throw new QueryError(FIELD_LIKE.test(field) ? `unknown field '${field}'` : "unknown field", offset);
}

const FIELD_LIKE = /^[A-Za-z_.]{1,64}$/;

/** (a AND b) AND c is a AND b AND c: one level per operator keeps evaluation and SQL flat. */
function flatten(kind: "and" | "or", children: QueryNode[]): QueryNode[] {
  return children.flatMap((child) => (child.kind === kind ? child.children : [child]));
}
