// `npm run bench:seed-search`: loads the search benchmark's corpus and reports how fast, without benchmarking
// searches. With --data the corpus stays for `npm run bench:search -- --data DIR` to reuse.
import { parseArgs } from "node:util";
import { readManifest, seedSearch } from "./search/seed.js";
import {
  assertEmpty,
  corpusSettings,
  resolveTarget,
  runTool,
  type CorpusSettings,
  CORPUS_OPTIONS,
} from "./search/target.js";

const USAGE = `Usage: npm run bench:seed-search -- [options]

  --tokens <n>        tokens to load (default 1000000)
  --store <kind>      sqlite (default) or postgres: TESSERA_DATABASE_URL, else a throwaway local cluster
  --data <dir>        seed into <dir> and keep it (default: a temporary directory, removed at exit)
  -h, --help          show this help
`;

async function main(argv: string[]): Promise<number> {
  let settings: CorpusSettings;
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        ...CORPUS_OPTIONS,
        help: { type: "boolean", short: "h" },
      },
    });
    if (values.help === true) {
      process.stdout.write(USAGE);
      return 0;
    }
    settings = corpusSettings(values);
  } catch (error) {
    process.stderr.write(`seed-search: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { target } = await resolveTarget(settings.store, settings.dataDir);
  const existing = await readManifest(target, settings.tokens);
  if (existing !== undefined) {
    process.stderr.write(
      `${target.dir} already holds this corpus (seeded ${existing.seededAt} in ${existing.seconds.toFixed(0)} s)\n`,
    );
    return 0;
  }
  assertEmpty(target.dir);
  const manifest = await seedSearch({ target, tokens: settings.tokens, progress: process.stderr });
  const { known, counts } = manifest;
  process.stdout.write(`${JSON.stringify({ dir: target.dir, known, counts }, null, 2)}\n`);
  return 0;
}

await runTool("seed-search", () => main(process.argv.slice(2)));
