import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

/**
 * The one way the tests and benchmarks start a browser: Debian's Chromium driven by playwright-core (never a
 * downloaded browser), headless with the flags the project settled on, in a fresh profile removed on close.
 */

export const CHROMIUM = "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  readonly context: BrowserContext;
  /** Closes the browser, then removes its profile, even when closing fails. */
  close(): Promise<void>;
}

export async function launchChromium(viewport?: { width: number; height: number }): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), "tessera-chromium-"));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      ...(viewport !== undefined && { viewport }),
    });
    return {
      context,
      close: async () => {
        try {
          await context.close();
        } finally {
          rmSync(profile, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
