/**
 * Copies the screenshots the browser tests took (test-output/screenshots, written by test/console.test.ts) into
 * docs/images as console-<page>.png: the docs show what the last test run saw. Run the tests first.
 */
import { copyFileSync, existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SHOTS = path.resolve(HERE, "../test-output/screenshots");
const DOCS = path.resolve(HERE, "../../../docs/images");

/** The pages docs/console.md shows: the desktop view of each, and the phone view of one. */
const PAGES = [
  "sign-in-1280x800",
  "application-edit-1280x800",
  "explain-1280x800",
  "tokens-error-1280x800",
  "tokens-1280x800",
  "reactor-error-1280x800",
  "reactor-1280x800",
  "reactor-async-1280x800",
  "audit-1280x800",
  "explainer-390x844",
];

mkdirSync(DOCS, { recursive: true });
const missing = PAGES.filter((name) => !existsSync(path.join(SHOTS, `${name}.png`)));
if (missing.length > 0) {
  console.error(
    `no screenshots for ${missing.join(", ")} in ${SHOTS}: run the console's browser tests first`,
  );
  process.exit(1);
}
for (const name of PAGES) {
  const target = path.join(DOCS, `console-${name.replace(/-1280x800$/, "")}.png`);
  copyFileSync(path.join(SHOTS, `${name}.png`), target);
  console.log(`${path.relative(process.cwd(), target)} ${Math.round(statSync(target).size / 1024)} KB`);
}
