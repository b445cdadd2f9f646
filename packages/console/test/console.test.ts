import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { STORE, STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../server/test/webhook-receiver.js";
import {
  arrowTo,
  DESKTOP,
  expectAccessible,
  HAVE_CHROMIUM,
  launchChromium,
  PHONE,
  screenshot,
  tabTo,
  untilClicksArrive,
  watchedPage,
  type Browser,
} from "./browser.js";

const CI = process.env.CI === "true";

if (!HAVE_CHROMIUM) {
  const message =
    "the console's browser tests need Debian's Chromium at /usr/bin/chromium (apt-get install chromium)";
  if (CI) {
    it("runs the console's browser tests", () => {
      throw new Error(`${message}; CI must have it`);
    });
  } else {
    console.warn(`skipped: ${message}`);
  }
}

const SECRET = "card4242";

/** The part of an HTMLSelectElement these tests read (their types are Node's, without the DOM's). */
interface HTMLSelect {
  readonly selectedOptions: ArrayLike<{ readonly text: string }>;
}

/** Waits on the page as it reacts; generous, since the machine running the tests may be busy. */
const poll = <T>(value: () => T | Promise<T>, message?: string) =>
  expect.poll(value, { timeout: 15_000, interval: 100, ...(message !== undefined && { message }) });

describe.skipIf(!HAVE_CHROMIUM || STORE_UNAVAILABLE)(`the console in Chromium (${STORE})`, () => {
  let server: TestServer;
  let browser: Browser;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    [server, browser, receiver] = await Promise.all([
      // Webhooks to the loopback receiver, polled and retried quickly.
      startTestServer({
        TESSERA_WEBHOOK_ALLOW_PRIVATE: "true",
        TESSERA_JOB_POLL_MS: "100",
        TESSERA_WEBHOOK_RETRY_BASE_MS: "100",
      }),
      launchChromium(),
      startWebhookReceiver(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([browser?.close(), server?.close(), receiver?.close()]);
  });

  async function signIn(page: Page, key = server.bootstrapKey) {
    await page.goto(`${server.url}/console`);
    await page.getByLabel("Management key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Applications");
  }

  const nav = (page: Page, name: string) =>
    page.getByRole("navigation", { name: "Main" }).getByRole("link", { name }).click();

  const heading = (page: Page) => page.getByRole("heading", { level: 1 });

  it("signs in, creates an Application with two rules, explains, searches, runs a reactor and audits it", async () => {
    const { page, problems } = await watchedPage(browser.context);
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    await signIn(page);
    // The key is in the tab's memory and nowhere else.
    expect(await page.evaluate("[localStorage.length, sessionStorage.length, document.cookie]")).toEqual([
      0,
      0,
      "",
    ]);
    expect(await browser.context.cookies()).toEqual([]);

    // An Application with two rules, reordered by dragging and back with the buttons.
    await page.getByRole("link", { name: "Create an Application" }).click();
    await page.getByLabel("Name").fill("checkout backend");
    await page.getByRole("button", { name: "Add a rule" }).click();
    await page.getByRole("button", { name: "Add a rule" }).click();
    const rule = (n: number) => page.getByRole("listitem", { name: new RegExp(`^Rule ${n},`) });
    await rule(1).getByLabel("Rule 1 container").fill("/pci/high/");
    await rule(1).getByLabel("Rule 1 transform").selectOption("reveal");
    await rule(1)
      .getByRole("checkbox", { name: /token:create/ })
      .uncheck();
    await rule(1)
      .getByRole("checkbox", { name: /token:read/ })
      .check();
    await rule(2).getByLabel("Rule 2 container").fill("/");
    for (const permission of ["token:read", "token:search", "token:use"]) {
      await rule(2)
        .getByRole("checkbox", { name: new RegExp(permission) })
        .check();
    }
    const handle = page.getByRole("button", { name: "Drag rule 2 to reorder" });
    const target = (await rule(1).boundingBox())!;
    const from = (await handle.boundingBox())!;
    await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
    await page.mouse.down();
    await page.mouse.move(from.x + 5, from.y - 10, { steps: 5 });
    await page.mouse.move(from.x + 5, target.y + 5, { steps: 15 });
    await page.mouse.up();
    await poll(() => page.locator('[id^="DndLiveRegion"]').textContent()).toMatch(/dropped at position 1/);
    await poll(() => page.getByLabel("Rule 1 container").inputValue()).toBe("/");
    // A click sent in the moment after a pointer drop is swallowed by dnd-kit (see untilClicksArrive).
    await untilClicksArrive(page);
    await page.getByRole("button", { name: "Move rule 1 down" }).click();
    await poll(() => page.getByLabel("Rule 1 container").inputValue()).toBe("/pci/high/");
    await screenshot(page, "application-edit");
    await page.getByRole("button", { name: "Create Application" }).click();

    await poll(() => heading(page).textContent()).toBe("Application created");
    const key = await page.getByTestId("secret-value").textContent();
    expect(key).toMatch(/^key_prv_/);
    await page.getByRole("button", { name: "Copy" }).click();
    await poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(key);
    await page.getByRole("button", { name: /Use this key for the token pages/ }).click();

    // A token in /pci/high/, read through rule 1 (reveal).
    await poll(() => heading(page).textContent()).toBe("Tokens");
    await page.getByLabel("Data", { exact: true }).fill(SECRET);
    await page.getByLabel("Containers (optional)").fill("/pci/high/");
    await page.getByLabel("Mask (optional)").fill("{{ data | reveal_last: 4 }}");
    await page.getByRole("button", { name: "Create token" }).click();
    await poll(() => page.getByTestId("token-data").textContent()).toBe(SECRET);
    const tokenId = page.url().split("/").pop()!;
    await screenshot(page, "token");

    // Why: the explainer, prefilled from the token page.
    await page.getByRole("link", { name: "Explain why this key sees it so" }).click();
    await poll(() => heading(page).textContent()).toBe("Access explainer");
    await page.getByRole("button", { name: "Explain" }).click();
    await poll(() => page.getByTestId("summary").textContent()).toBe(
      "token:read allowed by Rule 1 (priority 1): reveal.",
    );
    await page.getByLabel("Permission").selectOption("token:use");
    await page.getByRole("button", { name: "Explain" }).click();
    await poll(() => page.getByTestId("summary").textContent()).toBe(
      "token:use allowed by Rule 2 (priority 2): mask.",
    );
    await expect(
      page.getByRole("list").filter({ hasText: "passed over" }).first().textContent(),
    ).resolves.toMatch(/holds token:read, not token:use/);
    await screenshot(page, "explain");

    // Search: the server's error at its offset in the input, then results.
    await nav(page, "Tokens");
    const query = page.getByLabel("Query");
    await query.fill("type:token AND colour:blue");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const error = page.getByRole("alert").filter({ hasText: "offset" });
    await poll(() => error.textContent()).toMatch(/colour.*\(at offset 15\)/);
    await poll(() => page.getByTestId("query-caret").textContent()).toMatch(/\n {15}\^$/);
    expect(await query.getAttribute("aria-invalid")).toBe("true");
    // The caret moves in an effect, which React may run in a later task than the render that shows the error.
    await poll(() =>
      query.evaluate((el) => (el as unknown as { selectionStart: number }).selectionStart),
    ).toBe(15);
    await screenshot(page, "tokens-error");
    await query.fill('type:token AND container:"/pci/*"');
    await query.press("Enter");
    const row = page.getByRole("row").filter({ hasText: tokenId });
    await poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain("XXXX4242");
    await screenshot(page, "tokens");

    // A reactor: the save-time syntax error at its line and column, then saved, configured and invoked.
    await nav(page, "Reactors");
    await page.getByRole("link", { name: "Create a reactor" }).click();
    await page.getByLabel("Name").fill("echo");
    const editor = page.getByRole("textbox", { name: "Code" });
    await editor.click();
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.press("Delete");
    // insertText, not key presses: the editor closes brackets as they are typed.
    await page.keyboard.insertText("module.exports = async ({ args }) => ({ raw: args ;");
    await page.getByRole("button", { name: "Create reactor" }).click();
    const marks = page.getByTestId("code-errors");
    await poll(() => marks.textContent()).toMatch(/Line 1, column \d+: .*\(line 1, column \d+\)/);
    await marks.getByRole("button").first().click();
    // The editor lives in a shadow root (code-editor.tsx): focus is the root's to tell.
    expect(await editor.evaluate((el) => el.getRootNode().activeElement === el)).toBe(true);
    await screenshot(page, "reactor-error");
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.press("Delete");
    await page.keyboard.insertText(
      "module.exports = async ({ args, configuration }) => ({ raw: { args, region: configuration.REGION } });",
    );
    await page.getByRole("button", { name: "Add a setting" }).click();
    await page.getByLabel("Configuration 1 name").fill("REGION");
    await page.getByLabel("Configuration 1 value").fill("eu");
    await page.getByRole("button", { name: "Create reactor" }).click();
    await poll(() => heading(page).textContent()).toBe("echo");
    await page.getByLabel("Arguments (JSON)").fill(`{"card": "{{ ${tokenId} }}"}`);
    await page.getByRole("button", { name: "Invoke" }).click();
    await poll(async () =>
      JSON.parse((await page.getByTestId("react-result").textContent()) ?? "null"),
    ).toEqual({ raw: { args: { card: "XXXX4242" }, region: "eu" } });
    await screenshot(page, "reactor");

    // The audit log has all of it.
    await nav(page, "Audit log");
    for (const action of [
      "application.create",
      "token.create",
      "token.explain",
      "token.search",
      "reactor.react",
    ]) {
      await poll(() => page.getByRole("cell", { name: action, exact: true }).count(), action).toBeGreaterThan(
        0,
      );
    }
    await page.getByLabel("Action").selectOption("reactor.react");
    await page.getByRole("button", { name: "Filter" }).click();
    await poll(() => page.getByRole("row").count()).toBe(2);
    await poll(() => page.getByText("tessera audit verify").count()).toBe(1);

    // Reloading forgets the key: the console signs in again.
    await page.reload();
    await poll(() => heading(page).textContent()).toBe("Sign in to Tessera");
    expect(problems).toEqual([]);
    await page.close();
  }, 240_000);

  it("signs out at once when the server answers 401 (the key was deleted)", async () => {
    const created = await server.request("POST", "/applications", {
      body: { name: "operator", type: "management", permissions: ["application:read", "log:read"] },
    });
    expect(created.status, created.text).toBe(201);
    const { page, problems } = await watchedPage(browser.context);
    await signIn(page, created.body.key);
    // The Applications page asks for its list as it opens: the key goes only once that list has been answered,
    // or a list request still on its way would meet the 401 first and sign out before the audit log is opened.
    await page.getByRole("region", { name: "Applications", exact: true }).waitFor();
    expect((await server.request("DELETE", `/applications/${created.body.id}`)).status).toBe(204);
    await nav(page, "Audit log");
    await poll(() => heading(page).textContent()).toBe("Sign in to Tessera");
    await poll(() => page.getByRole("status").textContent()).toMatch(/refused the management key \(401\)/);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it("works from the keyboard alone: sign in, an Application with reordered rules, an explanation", async () => {
    const { page, problems } = await watchedPage(browser.context);
    await page.goto(`${server.url}/console`);
    // Each page focuses its heading when it opens (so screen readers announce it): tab on from there.
    await poll(() => page.evaluate("document.activeElement?.tagName")).toBe("H1");
    await tabTo(page, /Management key/);
    await page.keyboard.type(server.bootstrapKey);
    await page.keyboard.press("Enter");
    await poll(() => heading(page).textContent()).toBe("Applications");

    await tabTo(page, /Skip to content/, { backwards: true });
    await tabTo(page, /^Create an Application$/);
    await page.keyboard.press("Enter");
    await poll(() => heading(page).textContent()).toBe("New Application");
    await tabTo(page, /^Name/);
    await page.keyboard.type("keyboard app");
    await tabTo(page, /Add a rule/);
    await page.keyboard.press("Enter");
    await page.keyboard.press("Enter");
    await tabTo(page, /Rule 2 container/, { backwards: true });
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.type("/second/");
    // dnd-kit's keyboard sensor: Space picks the rule up, ArrowUp moves it, Space drops it.
    await tabTo(page, /Drag rule 2 to reorder/, { backwards: true });
    const announced = (text: RegExp) =>
      poll(() => page.locator('[id^="DndLiveRegion"]').textContent()).toMatch(text);
    await page.keyboard.press("Space");
    await announced(/rule 2/i);
    // dnd-kit measures the rows after the pick-up; an arrow pressed before that moves nothing, so press again.
    const region = page.locator('[id^="DndLiveRegion"]');
    for (let i = 0; i < 10 && !/over position 1/.test((await region.textContent()) ?? ""); i++) {
      await page.keyboard.press("ArrowUp");
      await region
        .filter({ hasText: "over position 1" })
        .waitFor({ timeout: 1_000 })
        .catch(() => undefined);
    }
    await announced(/Rule 2 is over position 1/);
    await page.keyboard.press("Space");
    await announced(/dropped at position 1/);
    await poll(() => page.getByLabel("Rule 1 container").inputValue()).toBe("/second/");
    await tabTo(page, /Move rule 1 down/);
    await page.keyboard.press("Enter");
    await poll(() => page.getByLabel("Rule 2 container").inputValue()).toBe("/second/");
    await tabTo(page, /Create Application/);
    await page.keyboard.press("Enter");
    await poll(() => heading(page).textContent()).toBe("Application created");

    await tabTo(page, /^Access explainer$/, { backwards: true });
    await page.keyboard.press("Enter");
    await poll(() => heading(page).textContent()).toBe("Access explainer");
    // The picker lists the Applications once the server has answered; before that it holds only its prompt.
    const picker = page.getByLabel("Application", { exact: true });
    await poll(() => picker.getByRole("option", { name: "keyboard app (private)" }).count()).toBe(1);
    await tabTo(page, /^Application/);
    await arrowTo(page, "keyboard app (private)");
    // Tab reaches the checked radio of a group; the arrow keys choose another.
    await tabTo(page, /^a token$/);
    await page.keyboard.press("ArrowDown");
    await tabTo(page, /^Containers/);
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.type("/second/x/");
    await tabTo(page, /^Explain$/);
    await page.keyboard.press("Enter");
    await poll(() => page.getByTestId("summary").textContent()).toBe(
      "token:read denied: no rule of keyboard app holding it covers any of /second/x/.",
    );
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);

  it("explains for the Application a link filled in, before the picker's list of Applications has arrived", async () => {
    const linked = await server.request("POST", "/applications", {
      body: {
        name: "linked",
        type: "private",
        permissions: [],
        rules: [{ priority: 1, container: "/linked/", transform: "mask", permissions: ["token:read"] }],
      },
    });
    expect(linked.status, linked.text).toBe(201);
    const { page, problems } = await watchedPage(browser.context);
    await signIn(page);
    // The list the explainer's picker shows (the first 100 Applications) is held back until released.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route(/\/applications\?(.*&)?size=100(&|$)/, async (route) => {
      await held;
      await route.continue();
    });
    await page.getByRole("link", { name: "linked", exact: true }).click();
    await page.getByRole("link", { name: "Explain its access" }).click();
    await poll(() => heading(page).textContent()).toBe("Access explainer");
    const picker = page.getByLabel("Application", { exact: true });
    const chosen = () => picker.evaluate((el) => (el as unknown as HTMLSelect).selectedOptions[0]?.text);
    expect(await chosen()).toBe(linked.body.id);
    await page.getByRole("radio", { name: "a token in containers", exact: true }).check();
    await page.getByLabel("Containers", { exact: true }).fill("/linked/a/");
    await page.getByRole("button", { name: "Explain" }).click();
    await poll(() => page.getByTestId("summary").textContent()).toBe(
      "token:read allowed by Rule 1 (priority 1): mask.",
    );
    release();
    await poll(chosen).toBe("linked (private)");
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it("invokes asynchronously with the webhook attempts, regenerates and deletes with confirmation, rotates the secret, creates a tenant", async () => {
    const caller = await server.request("POST", "/applications", {
      body: {
        name: "async caller",
        type: "private",
        permissions: ["token:create", "token:read", "token:delete", "token:use"],
      },
    });
    expect(caller.status, caller.text).toBe(201);
    const reactor = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "async echo",
        code: "module.exports = async ({ args }) => ({ raw: args });",
      },
    });
    expect(reactor.status, reactor.text).toBe(201);
    const { page, problems } = await watchedPage(browser.context);
    await signIn(page);

    // An asynchronous invocation: its outcome and both webhook attempts (the receiver fails the first).
    receiver.respondWith([500], 200);
    await nav(page, "Reactors");
    await page.getByRole("link", { name: "async echo" }).click();
    await page.getByLabel("Private key", { exact: true }).fill(caller.body.key);
    await page.getByRole("button", { name: "Use this key" }).click();
    await page.getByLabel("Arguments (JSON)").fill('{"order": 42}');
    await page.getByLabel(/Callback URL/).fill(`${receiver.url}/hooks`);
    await page.getByRole("button", { name: "Invoke" }).click();
    const invocation = page.getByRole("article", { name: /^Invocation / });
    await poll(() => invocation.getByRole("heading").textContent()).toMatch(/: completed$/);
    await poll(() => invocation.getByRole("row").count()).toBe(2);
    expect(await invocation.getByRole("table").getByRole("caption").textContent()).toBe(
      "Webhook delivery: pending",
    );
    // The retry is due after a backoff on the server's clock, which the test server lets the test move.
    server.clock.advance(60_000);
    await poll(() => invocation.getByRole("table").getByRole("caption").textContent()).toBe(
      "Webhook delivery: delivered",
    );
    await poll(() => invocation.getByRole("row").count()).toBe(3);
    expect(await invocation.getByRole("row").nth(1).textContent()).toContain("500");
    expect(await invocation.getByRole("row").nth(2).textContent()).toContain("200");
    expect(await invocation.textContent()).toContain('"order": 42');
    await invocation.evaluate((el) => el.scrollIntoView({ block: "center" }));
    await screenshot(page, "reactor-async");

    // A token deleted from its page, after a confirmation.
    await nav(page, "Tokens");
    await page.getByLabel("Data", { exact: true }).fill("to be deleted");
    await page.getByRole("button", { name: "Create token" }).click();
    // Top-level token:read masks, and this token has no mask: the page says the data is not shown.
    await poll(() => page.getByTestId("token-data").textContent()).toBe("— (not shown)");
    const tokenId = decodeURIComponent(page.url().split("/").pop()!);
    await page.getByRole("button", { name: "Delete token" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await poll(() => heading(page).textContent()).toBe("Tokens");
    expect((await server.request("GET", `/tokens/${tokenId}`, { key: caller.body.key })).status).toBe(404);

    // The key regenerated (the old one stops working), then the Application deleted, each after a confirmation.
    await nav(page, "Applications");
    await page.getByRole("link", { name: "async caller" }).click();
    await page.getByRole("button", { name: "Regenerate key" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Regenerate" }).click();
    await poll(() => heading(page).textContent()).toBe("Key regenerated");
    const regenerated = await page.getByTestId("secret-value").textContent();
    expect(regenerated).toMatch(/^key_prv_/);
    expect((await server.request("GET", `/tokens?size=1`, { key: caller.body.key })).status).toBe(401);
    expect((await server.request("GET", `/tokens?size=1`, { key: regenerated })).status).toBe(200);
    await page.getByRole("button", { name: "Back to async caller" }).click();
    await page.getByRole("button", { name: "Delete Application" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    expect((await server.request("GET", `/applications/${caller.body.id}`)).status).toBe(200);
    await page.getByRole("button", { name: "Delete Application" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await poll(() => heading(page).textContent()).toBe("Applications");
    expect((await server.request("GET", `/applications/${caller.body.id}`)).status).toBe(404);

    // Settings: the webhook secret rotated, a tenant created (the bootstrap key holds tenant:create).
    const before = (await server.request("GET", "/webhooks/secret")).body.version as number;
    await nav(page, "Settings");
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Rotate" }).click();
    await poll(() => page.getByText(/^Rotated: version/).textContent()).toBe(
      `Rotated: version ${before + 1}.`,
    );
    await page.getByLabel("New tenant's name").fill("Acme");
    await page.getByRole("button", { name: "Create tenant" }).click();
    const tenantKey = await page.getByTestId("secret-value").textContent();
    expect(tenantKey).toMatch(/^key_mgt_/);
    expect((await server.request("GET", "/tenants/self", { key: tenantKey })).body.name).toBe("Acme");
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);

  it("renders every page at 1280×800 and 390×844 with no serious accessibility violation", async () => {
    const app = await server.request("POST", "/applications", {
      body: {
        name: "screens",
        type: "private",
        permissions: ["token:search"],
        rules: [
          {
            priority: 1,
            container: "/",
            transform: "mask",
            permissions: ["token:create", "token:read", "token:use"],
          },
        ],
      },
    });
    expect(app.status).toBe(201);
    const token = await server.request("POST", "/tokens", {
      key: app.body.key,
      body: { type: "card_number", data: "4242424242424242", metadata: { customer: "cus_123" } },
    });
    expect(token.status, token.text).toBe(201);
    const { page, problems } = await watchedPage(browser.context);
    await page.setViewportSize(DESKTOP);
    await page.goto(`${server.url}/console`);
    await expectAccessible(page, "sign-in");
    for (const size of [DESKTOP, PHONE]) {
      await page.setViewportSize(size);
      await screenshot(page, "sign-in");
    }
    await signIn(page);
    const pages: [string, (p: Page) => Promise<void>][] = [
      ["applications", (p) => nav(p, "Applications")],
      ["application", (p) => p.getByRole("link", { name: "screens" }).click()],
      ["explainer", (p) => nav(p, "Access explainer")],
      [
        "tokens",
        async (p) => {
          await nav(p, "Tokens");
          if ((await p.getByLabel("Private key", { exact: true }).count()) > 0) {
            await p.getByLabel("Private key", { exact: true }).fill(app.body.key);
            await p.getByRole("button", { name: "Use this key" }).click();
          }
          await p.getByRole("button", { name: "Search", exact: true }).click();
          await p.getByRole("table").waitFor();
        },
      ],
      ["reactors", (p) => nav(p, "Reactors")],
      ["reactor-new", (p) => p.getByRole("link", { name: "Create a reactor" }).click()],
      ["audit", (p) => nav(p, "Audit log")],
      ["settings", (p) => nav(p, "Settings")],
    ];
    for (const [name, open] of pages) {
      await page.setViewportSize(DESKTOP);
      await open(page);
      await page.waitForLoadState("networkidle");
      await page.getByRole("heading", { level: 1 }).waitFor();
      await expectAccessible(page, name);
      await screenshot(page, name);
      await page.setViewportSize(PHONE);
      await expectAccessible(page, `${name} (phone)`);
      // Nothing wider than the phone's screen but what scrolls in its own box (tables, code).
      const overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth");
      expect(overflow, `${name} overflows at 390 px`).toBeLessThanOrEqual(0);
      await screenshot(page, name);
    }
    expect(problems).toEqual([]);
    await page.close();
  }, 240_000);
});
