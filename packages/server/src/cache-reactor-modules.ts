import { createRequire } from "node:module";
import {
  buildInstallCache,
  INSTALL_CACHE,
  isInstallCacheCurrent,
  type InstallCacheRequest,
} from "./reactors/sandbox/module-cache.js";
import { npmSpecifier, parseReactorModules } from "./reactors/sandbox/modules.js";
import { denoBinary } from "./reactors/sandbox/setup.js";

// Caches the npm packages reactor code may require (TESSERA_REACTOR_MODULES, docs/reactors.md) with the bundled
// Deno, so that workers can run with --cached-only and never reach a registry. `npm install` and `npm ci` run it
// compiled, after the build (the root `prepare` script); run it again after changing TESSERA_REACTOR_MODULES:
//   npm run reactor-modules --workspace @tessera/server

const NPM_REGISTRY = "https://registry.npmjs.org/";
const EX_CONFIG = 78;

const problems: string[] = [];
const modules = parseReactorModules(process.env.TESSERA_REACTOR_MODULES, problems);
if (problems.length > 0) {
  process.stderr.write(`reactor modules: ${problems.join("; ")}\n`);
  process.exit(EX_CONFIG);
}

let deno: string;
try {
  deno = denoBinary();
} catch (error) {
  // Installing on a platform Deno has no build for (Windows) must not fail: the server runs there, reactors do not.
  process.stderr.write(`reactor modules: not cached, ${(error as Error).message}\n`);
  process.exit(0);
}

// npm hands its registry setting to install scripts; Deno reads the same setting under its upper-case name.
const registry = process.env.npm_config_registry ?? process.env.NPM_CONFIG_REGISTRY;
const request: InstallCacheRequest = {
  deno,
  denoVersion: (createRequire(import.meta.url)("deno/package.json") as { version: string }).version,
  modules,
  ...(registry && registry.replace(/\/?$/, "/") !== NPM_REGISTRY && { registry }),
  cacheDir: INSTALL_CACHE,
};
const names = modules.length === 0 ? "none" : modules.map(npmSpecifier).join(", ");

if (isInstallCacheCurrent(request)) {
  process.stdout.write(`reactor modules: up to date (${names})\n`);
} else {
  const started = Date.now();
  try {
    await buildInstallCache(request);
  } catch (error) {
    // Fails the install: a server without its packages would only say so when a reactor requires one.
    process.stderr.write(
      `reactor modules: caching ${names} failed; TESSERA_REACTOR_MODULES=none installs without npm packages` +
        ` for reactors.\n${(error as Error).message}\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`reactor modules: cached ${names} in ${Date.now() - started} ms\n`);
}
