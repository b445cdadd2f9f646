// The fences of packages/server/src (docs/architecture.md#fences), checked by `npm run lint`. Each rule was seen to
// fail once on a deliberate violation when it was written.
const SRC = "^packages/server/src";
/** Pure modules: no feature, storage or web code, only each other. */
const PURE = "(access|crypto|json|net|shared)";
/** The HTTP layer: routes, the hooks and plugins they run in, the HTTP kernel, and the composition root. */
const HTTP = [
  `${SRC}/server/`,
  `${SRC}/(app|main)\\.ts$`,
  `${SRC}/[^/]+/(routes|[a-z]+-routes)\\.ts$`,
  `${SRC}/(idempotency/hooks|limits/register)\\.ts$`,
];
/** npm packages resolve to their files under node_modules. */
const WEB = "(^|/)node_modules/(fastify|@fastify)/";
const KYSELY = "(^|/)node_modules/kysely/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-folder-cycles",
      comment:
        "Folders depend on each other one way: a cycle between two folders (through any of their files) is a knot " +
        "that makes neither understandable alone. Move the shared piece down, or invert the dependency.",
      severity: "error",
      scope: "folder",
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: "no-file-cycles",
      comment: "No module imports itself through others.",
      severity: "error",
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: "no-foreign-store-in-services",
      comment:
        "A service uses its own feature's store; another feature's data is reached through that feature's " +
        "service or interface (applicationsIn, TenantKeys, Resealable...).",
      severity: "error",
      from: { path: `${SRC}/([^/]+)/(service|[a-z-]+/service)\\.ts$` },
      to: { path: `${SRC}/[^/]+/(store|[a-z-]+/store)\\.ts$`, pathNot: `${SRC}/$1/` },
    },
    {
      name: "pure-modules-stay-pure",
      comment:
        "access/, crypto/, json/, net/ and shared/ import only each other: no feature, storage or web code.",
      severity: "error",
      from: { path: `${SRC}/${PURE}/` },
      to: { pathNot: `${SRC}/${PURE}/`, dependencyTypesNot: ["core"] },
    },
    {
      name: "search-knows-no-feature",
      comment:
        "search/ parses, plans and compiles queries; only its SQL stage (compile.ts, run.ts) touches storage, and " +
        "no part of it knows a feature or the web framework.",
      severity: "error",
      from: { path: `${SRC}/search/` },
      to: {
        path: [`${SRC}/`, WEB],
        pathNot: [`${SRC}/${PURE}/`, `${SRC}/search/`, `${SRC}/storage/(database|schema)\\.ts$`],
      },
    },
    {
      name: "search-pure-stages",
      comment: "Before its SQL stage (compile, top-level, run), search/ is pure: no storage and no Kysely.",
      severity: "error",
      from: { path: `${SRC}/search/`, pathNot: `${SRC}/search/(compile|top-level|run)\\.ts$` },
      to: { path: [`${SRC}/storage/`, KYSELY] },
    },
    {
      name: "fastify-only-in-the-http-layer",
      comment:
        "Only routes, their hooks and plugins, the HTTP kernel (server/) and the composition root import Fastify; " +
        "services, stores and pure modules know no HTTP.",
      severity: "error",
      from: { path: SRC, pathNot: [...HTTP, "\\.test\\.ts$"] },
      to: { path: WEB },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["\\.test\\.ts$", "^packages/[^/]+/dist/", "/generated/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { conditionNames: ["tessera-source", "import", "node", "default"] },
  },
};
