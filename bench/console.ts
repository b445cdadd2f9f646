// `npm run bench:console`: the console's two budgets (issue 22). The initial JavaScript, gzipped, against 250 KB;
// and the time to a first interactive page in headless Chromium over loopback, median of RUNS fresh profiles,
// against 1 s, beside the same measure for a bare page with one module script served by Node on loopback (the
// ceiling: what the browser and the loopback cost before any of the console's work).
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { loadConfig, serve } from "@tessera/server";
import { launchChromium } from "../test/chromium.js";
import { formatTable, ms } from "./format.js";
import { median } from "./load.js";

const JS_BUDGET_BYTES = 250 * 1024;
const INTERACTIVE_BUDGET_MS = 1_000;
const RUNS = 15;
const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../packages/console/dist");

/** The scripts index.html loads before anything else: its module entry and the chunks it preloads. */
function initialScripts(): string[] {
  const html = readFileSync(path.join(DIST, "index.html"), "utf8");
  const refs = [...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="([^"]+)"/g)];
  return refs.map((match) => match[1]!.replace(/^\/console\//, ""));
}

function sizes() {
  const files = initialScripts();
  const bytes = files.map((file) => readFileSync(path.join(DIST, file)));
  return {
    files,
    raw: bytes.reduce((sum, b) => sum + b.length, 0),
    gzipped: bytes.reduce((sum, b) => sum + gzipSync(b, { level: 9 }).length, 0),
  };
}

/** A page with one module script that marks itself interactive: the floor of the measure. */
function bareServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    if (request.url === "/app.js") {
      response.writeHead(200, { "content-type": "text/javascript" });
      response.end('document.getElementById("key").disabled = false;');
      return;
    }
    response.writeHead(200, { "content-type": "text/html" });
    response.end('<!doctype html><input id="key" disabled><script type="module" src="/app.js"></script>');
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

/**
 * Milliseconds from navigation start until `selector` is in the page and enabled: for the console, the sign-in
 * field React renders once its code has run, which is when the page answers input.
 */
async function timeToInteractive(url: string, selector: string): Promise<number[]> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      await page.goto(url, { waitUntil: "commit" });
      await page.locator(`${selector}:enabled`).waitFor();
      times.push(await page.evaluate<number>("performance.now()"));
    } finally {
      await browser.close();
    }
  }
  return times;
}

async function main() {
  const load = os.loadavg();
  const js = sizes();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "tessera-bench-console-"));
  const server = await serve(
    loadConfig({
      TESSERA_PORT: "0",
      TESSERA_DATA_DIR: dataDir,
      TESSERA_DATABASE_URL: `sqlite:${path.join(dataDir, "tessera.db")}`,
      TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
      TESSERA_BOOTSTRAP_KEY: randomBytes(24).toString("hex"),
      TESSERA_LOG_LEVEL: "silent",
    }),
    { write: () => true },
  );
  const bare = await bareServer();
  try {
    const consoleTimes = await timeToInteractive(`${server.url}/console`, "#management-key");
    const bareTimes = await timeToInteractive(bare.url, "#key");
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
    console.log(`load average ${load.map((l) => l.toFixed(2)).join(" ")} on ${os.cpus().length} cores`);
    console.log(
      formatTable(
        ["measure", "console", "ceiling", "budget"],
        [
          ["initial JS, gzipped", kb(js.gzipped), "", kb(JS_BUDGET_BYTES)],
          ["initial JS, as served", kb(js.raw), "", ""],
          [
            `first page interactive (ms), median of ${RUNS}`,
            ms(median(consoleTimes)),
            ms(median(bareTimes)),
            ms(INTERACTIVE_BUDGET_MS),
          ],
          [
            "  fastest / slowest",
            `${ms(Math.min(...consoleTimes))} / ${ms(Math.max(...consoleTimes))}`,
            "",
            "",
          ],
        ],
      ),
    );
    console.log(`initial scripts: ${js.files.join(", ")}`);
    const over = js.gzipped > JS_BUDGET_BYTES || median(consoleTimes) > INTERACTIVE_BUDGET_MS;
    if (over) {
      console.error("over budget");
      process.exitCode = 1;
    }
  } finally {
    await bare.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
