import { BUILTIN_MODULES, DENO_NODE_BUILTINS } from "./modules.js";

/**
 * The import map every worker runs with (`deno run --import-map`), so that `import()` in reactor code serves what
 * `require` serves and refuses the rest the same way, at run time. Reactor code is compiled inside the harness, so
 * its dynamic imports resolve through this map like the harness's own; neither needs a refused built-in (the
 * harness takes `process` from the global). npm packages resolve their own imports through Deno's Node resolver,
 * which the map does not touch, so `axios` keeps its `fs` and `net`.
 *
 * - a refused built-in (`vm`, `node:vm`, `child_process`, `worker_threads`, ...) becomes a module whose
 *   evaluation throws `Cannot import 'vm': not an allowed module`;
 * - an allowed one is served as itself under both names (`crypto` → `node:crypto`);
 * - an npm package reactor code may require is served under its bare name (`uuid` → `npm:uuid@11.1.1`).
 *
 * A specifier in neither list (a package not offered, `@tessera/reactor`) is refused by Deno itself, as not in the
 * map. What the map cannot name is `npm:<package>@<version>`: a package in the server's cache stays importable by
 * its full specifier (docs/reactors.md, "Not a boundary").
 */
export function workerImportMap(packages: Readonly<Record<string, string>>): {
  imports: Record<string, string>;
} {
  const allowed = new Set<string>(BUILTIN_MODULES);
  const imports: Record<string, string> = {};
  for (const builtin of DENO_NODE_BUILTINS) {
    const name = builtin.replace(/^node:/, "");
    // Those Deno lists with the prefix exist only under it; a bare `test` would be a package of that name.
    const specifiers = builtin.startsWith("node:") ? [builtin] : [name, `node:${name}`];
    for (const specifier of specifiers) {
      imports[specifier] = allowed.has(name) ? `node:${name}` : refusal(specifier);
    }
  }
  for (const [name, specifier] of Object.entries(packages)) imports[name] = specifier;
  return { imports };
}

/**
 * A module that fails as `require` does. The default export lets `import x from "vm"` link, so that it fails
 * with this message rather than a linking error.
 */
function refusal(specifier: string): string {
  const source = `export default undefined; throw new Error(${JSON.stringify(`Cannot import '${specifier}': not an allowed module`)});`;
  return `data:text/javascript,${encodeURIComponent(source)}`;
}
