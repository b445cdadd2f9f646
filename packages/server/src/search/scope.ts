import { ROOT } from "../access/decide.js";
import type { SearchScope } from "./compile.js";
import type { Predicate } from "./predicate.js";

/**
 * Whether the caller's rule containers cover every token of the tenant, given its top-level paths: then the
 * per-row rule check can go. A rule below the top level (`/pci/high/`) covers only part of `/pci/`, so it never
 * makes that check unnecessary.
 */
export function coversEverything(visiblePaths: readonly string[], topLevels: readonly string[]): boolean {
  if (visiblePaths.includes(ROOT)) return true;
  return topLevels.every((top) => top !== ROOT && visiblePaths.includes(top));
}

/**
 * What a search counts, as a string: tenant, rule containers and the predicate with every data value replaced by
 * its blind index, so that a cache keyed by it never holds a searched value in clear.
 */
export function searchKey(predicate: Predicate | undefined, scope: SearchScope): string {
  const blinded = (p: Predicate): Predicate => {
    switch (p.kind) {
      case "and":
      case "or":
        return { kind: p.kind, children: p.children.map(blinded) };
      case "not":
        return { kind: "not", child: blinded(p.child) };
      case "data":
        return { kind: "data", value: scope.blind(p.value) };
      case "equals":
      case "during":
      case "metadata":
      case "container":
      case "everything":
      case "prefix":
        return p;
    }
  };
  return JSON.stringify([
    scope.tenantId,
    scope.visiblePaths,
    predicate === undefined ? null : blinded(predicate),
  ]);
}
