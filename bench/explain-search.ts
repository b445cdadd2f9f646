// `npm run bench:explain-search -- --data DIR`: the query plans of the search benchmark's statements on a seeded
// corpus, and how long each statement takes alone, so that a slow scenario can be traced to its page or its count
// and to the plan step behind it (a `USE TEMP B-TREE` sort, a probe per row).
import { parseArgs } from "node:util";
import { CompiledQuery } from "kysely";
import { ruleContainers } from "../packages/server/src/access/decide.js";
import { loadConfig } from "../packages/server/src/config.js";
import { blindIndex } from "../packages/server/src/crypto/blind-index.js";
import { createLogger, openVault } from "../packages/server/src/main.js";
import { compileSearch } from "../packages/server/src/search/compile.js";
import { topLevelPaths } from "../packages/server/src/search/top-level.js";
import { coversEverything } from "../packages/server/src/search/scope.js";
import { parseQuery } from "../packages/server/src/search/parser.js";
import { toPredicate } from "../packages/server/src/search/predicate.js";
import { TOKEN_TYPES } from "../packages/server/src/tokens/token-types.js";
import { searchScenarios } from "./search/scenarios.js";
import { readManifest, tesseraEnv } from "./search/seed.js";
import { corpusSettings, resolveTarget, runTool, CORPUS_OPTIONS } from "./search/target.js";

const USAGE = `Usage: npm run bench:explain-search -- --data <dir> [--tokens <n>] [--store sqlite|postgres]

  Needs a corpus seeded by bench:seed-search or bench:search with the same --data, --tokens and --store.
`;
/** Runs per statement; the median is reported. */
const RUNS = 5;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...CORPUS_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help === true || values.data === undefined) {
    process.stdout.write(USAGE);
    return values.help === true ? 0 : 2;
  }
  const settings = corpusSettings(values);
  const { target } = await resolveTarget(settings.store, values.data);
  const manifest = await readManifest(target, settings.tokens);
  if (manifest === undefined) throw new Error(`${target.dir} holds no seeded corpus`);

  const config = loadConfig({ ...tesseraEnv(target), TESSERA_LOG_LEVEL: "error" });
  const vault = await openVault(config, createLogger(config));
  try {
    const authenticated = await vault.applications.authenticate(manifest.searchKey);
    if (authenticated === undefined) throw new Error("the corpus's search key is not valid in its store");
    const { principal } = authenticated;
    // The same scope the service builds for this caller (tokens/service.ts and search/run.ts).
    const indexKey = (await vault.tenantKeys.current(principal.tenantId, "index")).key;
    const rulePaths = ruleContainers(principal.application, "token:search");
    // As the token store does: rules covering every top-level container need no check per token.
    const tops = await vault.store.db.executeQuery<{ path: string }>(
      topLevelPaths(principal.tenantId).compile(vault.store.db),
    );
    const scope = {
      tenantId: principal.tenantId,
      now: new Date().toISOString(),
      visiblePaths: coversEverything(
        rulePaths,
        tops.rows.map((r) => r.path),
      )
        ? ["/"]
        : rulePaths,
      blind: (value: string) => blindIndex(indexKey, value),
    };
    const explain = (query: CompiledQuery) =>
      vault.store.db.executeQuery<Record<string, unknown>>(
        CompiledQuery.raw(
          `${vault.store.dialect === "sqlite" ? "explain query plan" : "explain (analyze, costs off)"} ${query.sql}`,
          [...query.parameters],
        ),
      );
    const time = async (query: CompiledQuery) => {
      const runs: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const started = process.hrtime.bigint();
        await vault.store.db.executeQuery(query);
        runs.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      return runs.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!;
    };

    for (const scenario of searchScenarios(manifest).filter((s) => s.api === "v1")) {
      const tree = parseQuery(scenario.query);
      const compiled = compileSearch(tree && toPredicate(tree, { types: TOKEN_TYPES }), scope);
      const statements = {
        page: compiled.page((scenario.page - 1) * scenario.size, scenario.size).compile(vault.store.db),
        count: compiled.count().compile(vault.store.db),
        // The v2 walk's page after a key (2024-01-01, the middle of the corpus): an index walk from the key.
        after: compiled
          .after({ createdAt: "2024-01-01T00:00:00.000Z", id: "0" }, scenario.size + 1)
          .compile(vault.store.db),
      };
      process.stdout.write(`\n=== ${scenario.name}: ${scenario.query} (page ${scenario.page})\n`);
      for (const [name, statement] of Object.entries(statements)) {
        const plan = (await explain(statement)).rows;
        process.stdout.write(`--- ${name}: median ${(await time(statement)).toFixed(2)} ms of ${RUNS}\n`);
        for (const row of plan) {
          const line =
            vault.store.dialect === "sqlite"
              ? `${String(row.detail)}${String(row.detail).includes("TEMP B-TREE") ? "   <-- sort" : ""}`
              : String(row["QUERY PLAN"]);
          process.stdout.write(`  ${line}\n`);
        }
      }
    }
    return 0;
  } finally {
    await vault.close();
  }
}

await runTool("bench:explain-search", () => main(process.argv.slice(2)));
