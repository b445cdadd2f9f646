import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAVE_CHROMIUM, launchChromium, type Browser } from "../../../test/chromium.js";
import { STORE, startTestServer, type TestServer } from "../../server/test/harness.js";
import type * as Sdk from "../src/index.js";
import { TesseraClient } from "../src/index.js";

/** Debian's Chromium; the test never downloads a browser. */
const SDK_ENTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/index.ts");
const CARD = "4242424242424242";

/** The SDK as a browser gets it: one ES module bundled for the browser platform, nothing of Node on its path. */
async function bundleSdk(): Promise<string> {
  const result = await build({
    entryPoints: [SDK_ENTRY],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  const [file] = result.outputFiles;
  if (file === undefined) throw new Error("esbuild wrote nothing");
  return file.text;
}

/** A merchant's page on an origin of its own: the page, and the bundled SDK beside it. */
async function servePage(sdk: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    if (request.url === "/sdk.js") {
      response.writeHead(200, { "content-type": "text/javascript" });
      response.end(sdk);
      return;
    }
    response.writeHead(200, { "content-type": "text/html" });
    response.end(`<!doctype html><title>checkout</title><script type="module">
      import * as sdk from "/sdk.js"; window.tessera = sdk; document.title = "ready";</script>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const closeServer = (server: Server | undefined) =>
  new Promise<void>((resolve) => {
    if (server === undefined) return resolve();
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** The bundled SDK as the page's script sees it (these functions run in the browser, not in Node). */
type PageWindow = { tessera: typeof Sdk };
describe.skipIf(STORE !== "sqlite" || !HAVE_CHROMIUM)("the SDK in Chromium, across origins", () => {
  let shop: { server: Server; origin: string } | undefined;
  let elsewhere: { server: Server; origin: string } | undefined;
  let vault: TestServer | undefined;
  let browser: Browser | undefined;
  let publicKey: string;
  let backend: TesseraClient;
  let admin: TesseraClient;
  const sessionsCreated = async () =>
    (await admin.logs.list({ action: "session.create", size: 100 })).pagination.totalItems;

  beforeAll(async () => {
    const sdk = await bundleSdk();
    // No Node module reaches the browser's bundle (the SDK's webhook fallback names one only by a variable).
    expect(sdk).not.toMatch(/from\s*["']node:|require\(["']node:/);
    shop = await servePage(sdk);
    elsewhere = await servePage(sdk);
    vault = await startTestServer({ TESSERA_CORS_ORIGINS: shop.origin });
    admin = new TesseraClient({ baseUrl: vault.url, apiKey: vault.bootstrapKey });
    publicKey = (
      await admin.applications.create({ name: "checkout", type: "public", permissions: ["token:create"] })
    ).key;
    const secret = await admin.applications.create({
      name: "backend",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:read"] }],
    });
    backend = new TesseraClient({ baseUrl: vault.url, apiKey: secret.key });

    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    try {
      await browser?.close();
    } finally {
      await vault?.close();
      await closeServer(shop?.server);
      await closeServer(elsewhere?.server);
    }
  });

  async function open(origin: string) {
    const page = await browser!.context.newPage();
    await page.goto(`${origin}/`);
    await page.waitForFunction('document.title === "ready"');
    return page;
  }

  it("tokenizes with a public key, opens a session the backend authorizes, and reads the token with it", async () => {
    const page = await open(shop!.origin);
    const created = await page.evaluate(
      async ({ baseUrl, key, card }) => {
        const { TesseraClient: Client } = (globalThis as unknown as PageWindow).tessera;
        const client = new Client({ baseUrl, apiKey: key, maxRetries: 0 });
        const token = await client.tokens.create({ type: "card_number", data: card });
        const session = await client.sessions.create();
        return { tokenId: token.id, shown: token.data, session };
      },
      { baseUrl: vault!.url, key: publicKey, card: CARD },
    );
    expect(created.tokenId).toMatch(/[0-9a-f-]{36}/);
    // The public key's own create rule masks what it just sent; it can never read the token back.
    expect(created.shown).toBe(`XXXXXXXXXXXX${CARD.slice(-4)}`);
    expect(created.session.sessionKey).toMatch(/^key_ses_/);

    // The page hands the nonce to its backend, which authorizes this one token, revealed.
    await backend.sessions.authorize({
      nonce: created.session.nonce,
      rules: [
        {
          priority: 1,
          transform: "reveal",
          permissions: ["token:read"],
          conditions: [{ attribute: "id", operator: "equals", value: created.tokenId }],
        },
      ],
    });

    const data = await page.evaluate(
      async ({ baseUrl, key, id }) => {
        const { TesseraClient: Client } = (globalThis as unknown as PageWindow).tessera;
        return (await new Client({ baseUrl, apiKey: key, maxRetries: 0 }).tokens.get(id)).data;
      },
      { baseUrl: vault!.url, key: created.session.sessionKey, id: created.tokenId },
    );
    expect(data).toBe(CARD);
    await page.close();
  });

  it("lets the browser refuse a page of another origin the vault's answers", async () => {
    const before = await sessionsCreated();
    const page = await open(elsewhere!.origin);
    const outcome = await page.evaluate(
      async ({ baseUrl, key }) => {
        const { TesseraClient: Client } = (globalThis as unknown as PageWindow).tessera;
        try {
          await new Client({ baseUrl, apiKey: key, maxRetries: 0 }).sessions.create();
          return "answered";
        } catch (error) {
          return `${(error as Error).name}: ${String((error as Error).cause)}`;
        }
      },
      { baseUrl: vault!.url, key: publicKey },
    );
    // The SDK saw no response at all: fetch failed, as browsers fail a request CORS forbids.
    expect(outcome).toMatch(/^TesseraConnectionError: TypeError: Failed to fetch/);
    // A JSON POST with a key header needs a preflight, which the vault answered without CORS headers: the POST
    // itself never left the browser, so no session was made.
    expect(await sessionsCreated()).toBe(before);
    await page.close();
  });
});
