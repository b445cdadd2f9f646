import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build, type BuildOptions } from "esbuild";

/**
 * Builds what the vault serves under /elements/ into dist/, and the ES module for bundlers:
 *
 *   dist/v1/elements.js            the page library (a script defining `TesseraElements`), stable URL
 *   dist/v1/frame.html             the field document, stable URL, naming its hashed script and style
 *   dist/v1/frame-<hash>.js|.css   immutable
 *   dist/demo.html, dist/demo/…    the demo checkout (served only where enabled)
 *   dist/elements.mjs              `import { TesseraElements } from "@tessera/elements"`
 *   dist/manifest.json             every served file with its role, which sets its headers (server/src/elements)
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");

/** Browsers with `Object.hasOwn`, `adoptedStyleSheets` and `ResizeObserver`. */
const TARGET = ["chrome93", "edge93", "firefox101", "safari16.4"];

const common: BuildOptions = {
  bundle: true,
  minify: true,
  target: TARGET,
  legalComments: "none",
  logLevel: "warning",
  absWorkingDir: root,
};

type Role = "library" | "frame" | "asset" | "demo-page" | "demo-asset";

interface Served {
  readonly role: Role;
  readonly type: string;
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
};

async function hashed(entry: string, outdir: string, name: string): Promise<string> {
  const result = await build({
    ...common,
    entryPoints: { [name]: path.join(root, entry) },
    outdir: path.join(dist, outdir),
    entryNames: "[name]-[hash]",
    format: "iife",
    metafile: true,
  });
  const [output] = Object.keys(result.metafile.outputs);
  if (output === undefined) throw new Error(`no output for ${entry}`);
  return path.basename(output);
}

async function page(template: string, target: string, replacements: Record<string, string>): Promise<void> {
  let html = await readFile(path.join(root, template), "utf8");
  for (const [placeholder, value] of Object.entries(replacements)) html = html.replaceAll(placeholder, value);
  if (/%[A-Z_]+%/.test(html)) throw new Error(`${template}: a placeholder was left`);
  await writeFile(path.join(dist, target), html);
}

async function main(): Promise<void> {
  await rm(dist, { recursive: true, force: true });
  await mkdir(path.join(dist, "v1"), { recursive: true });
  await mkdir(path.join(dist, "demo"), { recursive: true });

  await build({
    ...common,
    entryPoints: [path.join(root, "src/parent/global.ts")],
    outfile: path.join(dist, "v1/elements.js"),
    format: "iife",
    globalName: "TesseraElements",
  });
  await build({
    ...common,
    minify: false,
    entryPoints: [path.join(root, "src/parent/index.ts")],
    outfile: path.join(dist, "elements.mjs"),
    format: "esm",
  });

  const frameJs = await hashed("src/frame/main.ts", "v1", "frame");
  const frameCss = await hashed("src/frame/frame.css", "v1", "frame");
  await page("src/frame/frame.html", "v1/frame.html", { "%FRAME_JS%": frameJs, "%FRAME_CSS%": frameCss });

  const demoJs = await hashed("src/demo/demo.ts", "demo", "demo");
  const demoCss = await hashed("src/demo/demo.css", "demo", "demo");
  await page("src/demo/demo.html", "demo.html", {
    "%DEMO_JS%": `demo/${demoJs}`,
    "%DEMO_CSS%": `demo/${demoCss}`,
  });

  const files: Record<string, Served> = {
    "v1/elements.js": { role: "library", type: TYPES[".js"]! },
    "v1/frame.html": { role: "frame", type: TYPES[".html"]! },
    [`v1/${frameJs}`]: { role: "asset", type: TYPES[".js"]! },
    [`v1/${frameCss}`]: { role: "asset", type: TYPES[".css"]! },
    "demo.html": { role: "demo-page", type: TYPES[".html"]! },
    [`demo/${demoJs}`]: { role: "demo-asset", type: TYPES[".js"]! },
    [`demo/${demoCss}`]: { role: "demo-asset", type: TYPES[".css"]! },
  };
  const { version } = JSON.parse(await readFile(path.join(root, "package.json"), "utf8")) as {
    version: string;
  };
  const digest = createHash("sha256");
  for (const file of Object.keys(files).sort())
    digest.update(file).update(await readFile(path.join(dist, file)));
  await writeFile(
    path.join(dist, "manifest.json"),
    `${JSON.stringify({ version, build: digest.digest("hex").slice(0, 16), files }, null, 2)}\n`,
  );
}

await main();
