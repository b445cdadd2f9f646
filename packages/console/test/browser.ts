import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { expect } from "vitest";
import { launchChromium as launchBrowser, type Browser } from "../../../test/chromium.js";

export { HAVE_CHROMIUM, type Browser } from "../../../test/chromium.js";

/** Where a run leaves its screenshots (ignored by git); `npm run doc-images` copies some into docs/images. */
export const OUTPUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../test-output");

export const DESKTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 390, height: 844 } as const;

/** Headless Chromium at the console's desktop size. */
export const launchChromium = (): Promise<Browser> => launchBrowser(DESKTOP);

export interface Watched {
  /** CSP violations and script errors seen so far. */
  readonly problems: string[];
}

/**
 * A page that records every CSP violation (the event, seen through an init script that CDP runs outside the
 * page's CSP) and every uncaught error, so that a test can assert the console ran cleanly under its policy.
 */
export async function watchedPage(context: BrowserContext): Promise<{ page: Page } & Watched> {
  const page = await context.newPage();
  const problems: string[] = [];
  await page.exposeFunction("__reportViolation", (text: string) => problems.push(text));
  // Page code as text: it runs in the browser, and this project's types are Node's.
  await page.addInitScript(`document.addEventListener("securitypolicyviolation", (event) =>
    window.__reportViolation("CSP: " + event.violatedDirective + " blocked " + event.blockedURI));`);
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/.test(message.text()))
      problems.push(`console: ${message.text()}`);
  });
  return { page, problems };
}

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core injected through CDP (evaluate is not subject to the page's CSP, which forbids inline scripts) and run
 * over the whole page: no serious or critical violation.
 */
export async function expectAccessible(page: Page, where: string): Promise<void> {
  await page.evaluate(AXE);
  const violations = await page.evaluate<
    AxeViolation[]
  >(`axe.run({ resultTypes: ["violations"] }).then((result) =>
    result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => JSON.stringify(n.target)),
    })))`);
  const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious, `${where}: ${JSON.stringify(serious, null, 1)}`).toEqual([]);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = path.join(OUTPUT, "screenshots");
  mkdirSync(dir, { recursive: true });
  const size = page.viewportSize();
  await page.screenshot({ path: path.join(dir, `${name}-${size?.width}x${size?.height}.png`) });
}

/**
 * Presses Tab (Shift+Tab with `backwards`) until the focused element's accessible text matches: keyboard-only
 * navigation that does not depend on counting stops.
 */
export async function tabTo(page: Page, name: RegExp, options: { backwards?: boolean } = {}): Promise<void> {
  for (let i = 0; i < 120; i++) {
    await page.keyboard.press(options.backwards === true ? "Shift+Tab" : "Tab");
    const focused = await page.evaluate<string>(`(() => {
      const element = document.activeElement;
      if (element === null) return "";
      const label = element.labels && element.labels.length > 0 ? element.labels[0].textContent : "";
      return [element.getAttribute("aria-label"), label, element.textContent].filter(Boolean).join(" | ");
    })()`);
    if (name.test(focused)) return;
    if (process.env.TESSERA_DEBUG_TAB === "1") console.log("focus:", focused);
  }
  throw new Error(`no focusable element matching ${String(name)} within 120 tabs`);
}

/**
 * Waits until a click reaches the page's elements again. After a pointer drop, dnd-kit's pointer sensor stops
 * every click at the document (a capture-phase listener, so that the release does not click what lies under
 * it) and lifts that listener on a 50 ms timer, which a busy renderer runs late since Chromium handles input
 * before timers: a click sent straight after a drop is swallowed. The probe is a click on an element of its
 * own, outside the app's root, so that nothing but that listener sees it.
 */
export async function untilClicksArrive(page: Page): Promise<void> {
  // A string, evaluated over CDP: the page's CSP forbids the eval that waitForFunction would use.
  const probe = `(() => {
    const probe = document.createElement("span");
    let arrived = false;
    probe.addEventListener("click", () => { arrived = true; });
    document.body.append(probe);
    probe.click();
    probe.remove();
    return arrived;
  })()`;
  await expect
    .poll(() => page.evaluate<boolean>(probe), { timeout: 15_000, interval: 20, message: "a click arrives" })
    .toBe(true);
}

/**
 * Chooses an option of the focused <select> with ArrowDown, as a keyboard user may. Not by typing its name:
 * the browser's type-to-select starts afresh after a second without a key, and a busy machine can take that
 * long between two keys, which then selects another option.
 */
export async function arrowTo(page: Page, option: string): Promise<void> {
  const selected = () => page.evaluate<string>(`document.activeElement.selectedOptions[0]?.text ?? ""`);
  const count = await page.evaluate<number>(`document.activeElement.options.length`);
  for (let i = 0; i < count && (await selected()) !== option; i++) await page.keyboard.press("ArrowDown");
  expect(await selected(), "the focused <select>'s option").toBe(option);
}
