import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("the console's bundle", () => {
  const out = mkdtempSync(path.join(tmpdir(), "tessera-console-build-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("bundles @tessera/sdk for the browser without a Node built-in, and loads CodeMirror lazily", async () => {
    // `vite build` as `npm install` runs it, in a process of its own: inside the test runner Vite does not report
    // modules it stubs for the browser.
    const manifest = createRequire(import.meta.url).resolve("vite/package.json");
    const vite = path.join(path.dirname(manifest), "bin", "vite.js");
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST")),
    );
    const run = spawnSync(process.execPath, [vite, "build", "--outDir", out, "--emptyOutDir"], {
      cwd: ROOT,
      env: { ...env, NODE_ENV: "production" },
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    // The SDK's webhook fallback names node:crypto; the bundler must leave it alone rather than stub it.
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/externalized for browser compatibility/);

    const html = readFileSync(path.join(out, "index.html"), "utf8");
    const initial = [...html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    const code = initial.map((file) => readFileSync(path.join(out, file), "utf8")).join("\n");
    expect(code).not.toMatch(/["']node:/);
    // The editor is a chunk of its own, not part of what the first page loads.
    const editor = readdirSync(path.join(out, "assets")).find((file) => file.startsWith("code-editor-"));
    expect(editor).toBeDefined();
    expect(initial).not.toContain(`assets/${editor}`);
    expect(code).not.toContain("cm-editor");
  }, 120_000);
});
