/** Modules reactor code may `require`: Node built-ins Deno provides, the error classes and a few npm packages. */

/** Node built-ins, also under `node:…`; Deno's permissions apply to them as to everything else. */
export const BUILTIN_MODULES = [
  "buffer",
  "crypto",
  "events",
  "http",
  "https",
  "process",
  "querystring",
  "stream",
  "url",
  "util",
  "zlib",
] as const;

/**
 * Every Node built-in the bundled Deno provides (its `builtinModules` from `node:module`; those written with the
 * `node:` prefix exist only under it). Reactor code may `import()` those of BUILTIN_MODULES, as it may require
 * them; the others are refused by the workers' import map (setup.ts). sandbox.test.ts checks this list against
 * Deno's own, so upgrading Deno cannot leave a new built-in importable.
 */
export const DENO_NODE_BUILTINS = [
  "_http_agent",
  "_http_common",
  "_http_outgoing",
  "_http_server",
  "_stream_duplex",
  "_stream_passthrough",
  "_stream_readable",
  "_stream_transform",
  "_stream_writable",
  "_tls_common",
  "_tls_wrap",
  "assert",
  "assert/strict",
  "async_hooks",
  "buffer",
  "child_process",
  "cluster",
  "console",
  "constants",
  "crypto",
  "dgram",
  "diagnostics_channel",
  "dns",
  "dns/promises",
  "domain",
  "events",
  "fs",
  "fs/promises",
  "http",
  "http2",
  "https",
  "inspector",
  "inspector/promises",
  "module",
  "net",
  "node:sqlite",
  "node:test",
  "node:test/reporters",
  "os",
  "path",
  "path/posix",
  "path/win32",
  "perf_hooks",
  "process",
  "punycode",
  "querystring",
  "readline",
  "readline/promises",
  "repl",
  "stream",
  "stream/consumers",
  "stream/promises",
  "stream/web",
  "string_decoder",
  "sys",
  "timers",
  "timers/promises",
  "tls",
  "trace_events",
  "tty",
  "url",
  "util",
  "util/types",
  "v8",
  "vm",
  "wasi",
  "worker_threads",
  "zlib",
] as const;

/** Our error classes, also under the name Basis Theory reactors already use (wire-format.md §7). */
export const ERROR_MODULES = [
  "@tessera/reactor",
  "@basis-theory/basis-theory-reactor-formulas-sdk-js",
] as const;

/** An npm package reactor code may require, at one exact version cached at install time. */
export interface NpmModule {
  readonly name: string;
  readonly version: string;
}

/**
 * The npm packages reactors get unless TESSERA_REACTOR_MODULES says otherwise, each the newest release whose
 * `require` works as in Node 16: node-fetch 3 and uuid 12+ are ESM-only, so `require` of them fails under Node 16.
 */
export const DEFAULT_MODULES: readonly NpmModule[] = Object.freeze([
  { name: "axios", version: "1.21.1" },
  { name: "node-fetch", version: "2.7.0" },
  { name: "uuid", version: "11.1.1" },
]);

// npm's rules for new package names, and exact versions only: a range would be resolved when the cache is built,
// so what reactors get would depend on the day of the install.
const NPM_NAME = /^(?:@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/;
const EXACT_VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** Names reactor code already has another meaning for: a package must not shadow them. */
const RESERVED = new Set<string>([...BUILTIN_MODULES, ...ERROR_MODULES]);

/** How reactor workers import a package from Deno's cache. */
export function npmSpecifier(module: NpmModule): string {
  return `npm:${module.name}@${module.version}`;
}

/**
 * TESSERA_REACTOR_MODULES: unset for DEFAULT_MODULES, `none` for no npm package, else a comma-separated list of
 * `name@version` (exact) or bare names of DEFAULT_MODULES, which take its version (`axios,lodash@4.17.21`).
 * Problems are added to `problems`, as config.ts collects them.
 */
export function parseReactorModules(text: string | undefined, problems: string[]): NpmModule[] {
  const value = text?.trim() ?? "";
  if (value === "") return [...DEFAULT_MODULES];
  if (value === "none") return [];
  const modules: NpmModule[] = [];
  const problem = (entry: string, what: string) =>
    problems.push(`TESSERA_REACTOR_MODULES: '${entry}' ${what}`);
  for (const entry of value.split(",").map((e) => e.trim())) {
    // A scoped name starts with "@": the version is after the last one.
    const at = entry.lastIndexOf("@");
    const name = at > 0 ? entry.slice(0, at) : entry;
    const version = at > 0 ? entry.slice(at + 1) : DEFAULT_MODULES.find((m) => m.name === entry)?.version;
    if (!NPM_NAME.test(name)) problem(entry, "is not an npm package name");
    else if (RESERVED.has(name)) problem(entry, "would shadow a module reactors already have");
    else if (version === undefined) {
      problem(entry, `needs an exact version (${name}@1.2.3); only ${defaultNames()} have a default`);
    } else if (!EXACT_VERSION.test(version)) problem(entry, "needs an exact version such as 1.2.3");
    else if (modules.some((m) => m.name === name)) problem(entry, "is listed twice");
    else modules.push({ name, version });
  }
  return modules;
}

function defaultNames(): string {
  return DEFAULT_MODULES.map((m) => m.name).join(", ");
}
