import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { loadConfig, serve } from "@tessera/server";
import { format, resolveConfig } from "prettier";
import { checkoutPage, startBrowser, startSite } from "../packages/elements/test/browser/harness.js";
import { formatTable, ms } from "./format.js";

/**
 * `npm run bench:elements`: the budgets of issue 20 item 7.
 *
 * - The page library and a field frame (its document, script and style), gzipped, beside their budgets.
 * - The time from `mount()` to the field's `ready`, in Debian's headless Chromium against a vault on loopback
 *   (another origin than the page), over ROUNDS fresh pages; beside it, its ceiling measured in the same run: the
 *   time the same browser takes to load the same frame document in a bare iframe (no library, no handshake).
 *
 * Writes the figures, with the machine's load, into docs/performance.md between the elements markers.
 */

// What the page-side functions below use, typed for this Node program (which has no DOM types).
interface PageIframe {
  src: string;
  addEventListener(type: "load", listener: () => void): void;
  remove(): void;
}
declare const document: {
  createElement(tag: "iframe"): PageIframe;
  body: { appendChild(node: PageIframe): void };
};
declare const window: {
  TesseraElements: {
    init(options: { baseUrl: string; key: string }): {
      createElement(type: "cardNumber"): { mount(target: string): Promise<void> };
    };
  };
};

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(ROOT, "packages/elements/dist");
const ROUNDS = 11;
const PARENT_BUDGET = 15 * 1024;
const FRAME_BUDGET = 30 * 1024;
const READY_BUDGET_MS = 300;

function gzipped(file: string): number {
  return gzipSync(readFileSync(path.join(DIST, file)), { level: 9 }).length;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function sizes() {
  const manifest = JSON.parse(readFileSync(path.join(DIST, "manifest.json"), "utf8")) as {
    files: Record<string, { role: string }>;
  };
  const frameFiles = Object.entries(manifest.files)
    .filter(([file, entry]) => file.startsWith("v1/") && (entry.role === "frame" || entry.role === "asset"))
    .map(([file]) => file);
  return {
    parent: gzipped("v1/elements.js"),
    frame: frameFiles.reduce((sum, file) => sum + gzipped(file), 0),
    frameFiles,
  };
}

async function timings(): Promise<{ ready: number[]; ceiling: number[] }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "tessera-bench-elements-"));
  let vaultUrl = "";
  const merchant = await startSite(() => checkoutPage(vaultUrl));
  const bootstrapKey = `bench-${randomBytes(24).toString("hex")}`;
  const vault = await serve(
    loadConfig({
      TESSERA_DATA_DIR: dataDir,
      TESSERA_DATABASE_URL: `sqlite:${path.join(dataDir, "tessera.db")}`,
      TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
      TESSERA_BOOTSTRAP_KEY: bootstrapKey,
      TESSERA_PORT: "0",
      TESSERA_LOG_LEVEL: "warn",
      TESSERA_ELEMENTS_ORIGINS: merchant.url,
    }),
    { write: () => true },
  );
  const browser = await startBrowser().catch(async (error: unknown) => {
    await vault.close();
    throw error;
  });
  try {
    vaultUrl = vault.url.replace("127.0.0.1", "localhost");
    const created = await fetch(`${vault.url}/applications`, {
      method: "POST",
      headers: { "svc-api-key": bootstrapKey, "content-type": "application/json" },
      body: JSON.stringify({ name: "bench", type: "public", permissions: ["token:create"] }),
    });
    const { key } = (await created.json()) as { key: string };
    const ready: number[] = [];
    const ceiling: number[] = [];
    // Alternating rounds, each on a fresh page; the first of each warms the browser's cache as a shopper's would be
    // warmed by the page that led to the checkout.
    for (let round = 0; round <= ROUNDS; round++) {
      const page = await browser.context.newPage();
      try {
        await page.goto(`${merchant.url}/checkout.html`);
        const bare = await page.evaluate(async (frameUrl) => {
          const iframe = document.createElement("iframe");
          const loaded = new Promise<void>((resolve) => iframe.addEventListener("load", resolve));
          const start = performance.now();
          iframe.src = frameUrl;
          document.body.appendChild(iframe);
          await loaded;
          const elapsed = performance.now() - start;
          iframe.remove();
          return elapsed;
        }, `${vaultUrl}/elements/v1/frame.html`);
        const mounted = await page.evaluate(
          async ({ baseUrl, key }) => {
            const elements = window.TesseraElements.init({ baseUrl, key });
            const field = elements.createElement("cardNumber");
            const start = performance.now();
            await field.mount("#number");
            return performance.now() - start;
          },
          { baseUrl: vaultUrl, key },
        );
        if (round > 0) {
          ceiling.push(bare);
          ready.push(mounted);
        }
      } finally {
        await page.close();
      }
    }
    return { ready, ceiling };
  } finally {
    await browser.close();
    await vault.close();
    await merchant.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const size = sizes();
  const { ready, ceiling } = await timings();
  const loadAfter = os.loadavg()[0]!;
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  const verdict = (pass: boolean) => (pass ? "pass" : "MISSED");
  const rows = [
    [
      "page library (elements.js), gzipped",
      kb(size.parent),
      "",
      `≤ ${kb(PARENT_BUDGET)}`,
      verdict(size.parent <= PARENT_BUDGET),
    ],
    [
      `field frame (${size.frameFiles.map((file) => path.basename(file)).join(" + ")}), gzipped`,
      kb(size.frame),
      "",
      `≤ ${kb(FRAME_BUDGET)}`,
      verdict(size.frame <= FRAME_BUDGET),
    ],
    [
      `mount() → ready, median of ${ready.length} (min–max)`,
      `${ms(median(ready))} ms (${ms(Math.min(...ready))}–${ms(Math.max(...ready))})`,
      `${ms(median(ceiling))} ms (${ms(Math.min(...ceiling))}–${ms(Math.max(...ceiling))})`,
      `≤ ${READY_BUDGET_MS} ms`,
      verdict(median(ready) <= READY_BUDGET_MS),
    ],
  ];
  const head = ["measure", "Tessera Elements", "ceiling: bare iframe load of the frame", "budget", "verdict"];
  console.log(formatTable(head, rows));
  const load = `load average ${loadBefore.toFixed(2)} at the start, ${loadAfter.toFixed(2)} at the end, ${os.cpus().length} cores`;
  console.log(load);

  const markdownRows = rows.map((row) => `| ${row.join(" | ")} |`).join("\n");
  const section = [
    "<!-- elements-bench:start -->",
    `\`npm run bench:elements\`, ${new Date().toISOString().slice(0, 10)}, Chromium at /usr/bin/chromium, ${load}:`,
    "",
    `| ${head.join(" | ")} |`,
    `| ${head.map(() => "---").join(" | ")} |`,
    markdownRows,
    "<!-- elements-bench:end -->",
  ].join("\n");
  const file = path.join(ROOT, "docs/performance.md");
  const doc = readFileSync(file, "utf8");
  const pattern = /<!-- elements-bench:start -->[^]*?<!-- elements-bench:end -->/;
  const updated = pattern.test(doc) ? doc.replace(pattern, section) : `${doc.trimEnd()}\n\n${section}\n`;
  // Formatted as `npm run lint` expects the docs to be.
  writeFileSync(file, await format(updated, { ...(await resolveConfig(file)), filepath: file }));
  console.log(`written to ${path.relative(ROOT, file)}`);
}

await main();
