import type { QueryNode } from "./ast.js";
import { parseQuery, QueryError } from "./parser.js";

/**
 * A query with every value replaced by `?`: what the audit log keeps of a search. The fields, operators and
 * grouping show what was looked for; the values (a social security number in `data:`, a customer in
 * `metadata.<key>:`) stay out of the log. An open range bound stays `*`.
 */
export function queryShape(node: QueryNode | undefined): string {
  if (node === undefined) return "";
  const inner = (child: QueryNode, parent: "and" | "not") =>
    child.kind === "or" || (parent === "not" && child.kind === "and")
      ? `(${queryShape(child)})`
      : queryShape(child);
  switch (node.kind) {
    case "and":
      return node.children.map((child) => inner(child, "and")).join(" AND ");
    case "or":
      return node.children.map((child) => queryShape(child)).join(" OR ");
    case "not":
      return `NOT ${inner(node.child, "not")}`;
    case "term":
      return `${node.field}:?`;
    case "range": {
      const open = node.lower?.inclusive === false ? "{" : "[";
      const close = node.upper?.inclusive === false ? "}" : "]";
      return `${node.field}:${open}${node.lower === undefined ? "*" : "?"} TO ${node.upper === undefined ? "*" : "?"}${close}`;
    }
  }
}

/**
 * How many `data:` terms a query holds, wherever they stand (under NOT and OR too): what the data-term limit
 * charges (limits/register.ts). A query that does not parse holds none: it is refused before anything is searched.
 */
export function countDataTerms(query: string | null | undefined): number {
  let tree: QueryNode | undefined;
  try {
    tree = parseQuery(query ?? "");
  } catch (error) {
    if (error instanceof QueryError) return 0;
    throw error;
  }
  const count = (node: QueryNode | undefined): number => {
    if (node === undefined) return 0;
    switch (node.kind) {
      case "and":
      case "or":
        return node.children.reduce((sum, child) => sum + count(child), 0);
      case "not":
        return count(node.child);
      case "term":
        return node.field === "data" ? 1 : 0;
      case "range":
        return 0;
    }
  };
  return count(tree);
}
