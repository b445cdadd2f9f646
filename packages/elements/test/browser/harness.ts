import http from "node:http";
import type { AddressInfo } from "node:net";
import { CHROMIUM, HAVE_CHROMIUM, launchChromium, type Browser } from "../../../../test/chromium.js";

export type { Browser } from "../../../../test/chromium.js";

/**
 * The shared browser (test/chromium.ts), a merchant site on one loopback origin and a vault on another, and a
 * listener standing for "elsewhere".
 */

/**
 * Whether the browser tests run: without Chromium they are skipped with a message, except in CI (CI=true), where
 * .ci/run installs Debian's `chromium` and its absence fails them.
 */
export function browserTestsRun(): boolean {
  if (HAVE_CHROMIUM || process.env.CI === "true") return true;
  console.warn(`Skipping the Elements browser tests: ${CHROMIUM} is missing (apt-get install chromium).`);
  return false;
}

/** A fresh browser; in CI, a missing Chromium is an error, not a skip. */
export async function startBrowser(): Promise<Browser> {
  if (!HAVE_CHROMIUM) {
    throw new Error(
      `CI=true: the Elements browser tests need Debian's chromium at ${CHROMIUM} (apt-get install chromium)`,
    );
  }
  return launchChromium({ width: 720, height: 900 });
}

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: string;
  readonly body: string;
}

export interface Site {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** The same server as http://localhost:<port>: another origin, for a page that is not allowed. */
  readonly otherOrigin: string;
  /** Every request the site received. */
  readonly received: Received[];
  close(): Promise<void>;
}

/**
 * A site on loopback: GET /checkout.html serves `page()` as a merchant's checkout; every request it receives is
 * recorded (the listener "elsewhere" is the same kind of site with no page).
 */
export async function startSite(
  page: () => string = () => "<!doctype html><title>nothing</title>",
): Promise<Site> {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: JSON.stringify(request.headers),
        body: Buffer.concat(chunks).toString("utf8"),
      });
      if (request.method === "GET" && request.url === "/checkout.html") {
        response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page());
      } else {
        response.writeHead(404, { "content-type": "text/plain" }).end("not found");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    otherOrigin: `http://localhost:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** A merchant's checkout page: the library from the vault, four boxes for fields, nothing else of its own. */
export function checkoutPage(vault: string): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Merchant checkout</title>
    <script src="${vault}/elements/v1/elements.js"></script>
  </head>
  <body>
    <main>
      <h1>Checkout</h1>
      <div id="number"></div>
      <div id="expiry"></div>
      <div id="cvc"></div>
      <div id="text"></div>
    </main>
  </body>
</html>`;
}

/**
 * Runs in the merchant's page before any of its scripts (and in no frame of another origin): records what the
 * page's script could observe or emit (messages in and out, fetch and XHR, storage writes, console lines,
 * errors), keeps the MessageChannel ports the library makes (so a test can forge messages on them), and exposes
 * it all as `window.__observed` and `window.__ports`.
 */
export function instrumentation(merchantOrigin: string): string {
  return `(() => {
  if (location.origin !== ${JSON.stringify(merchantOrigin)}) return;
  const observed = (window.__observed = []);
  const ports = (window.__ports = []);
  const text = (value) => {
    try { return typeof value === "string" ? value : JSON.stringify(value); } catch { return String(value); }
  };
  const record = (kind, ...values) => observed.push(kind + " " + values.map(text).join(" "));

  const windowPost = window.postMessage;
  window.postMessage = function (...args) { record("window.postMessage", args[0], args[1]); return windowPost.apply(this, args); };
  window.addEventListener("message", (event) => record("window message from " + event.origin, event.data), true);

  const portPost = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (...args) { record("port.postMessage", args[0]); return portPost.apply(this, args); };
  const onmessage = Object.getOwnPropertyDescriptor(MessagePort.prototype, "onmessage");
  Object.defineProperty(MessagePort.prototype, "onmessage", {
    configurable: true,
    get() { return onmessage.get.call(this); },
    set(handler) {
      onmessage.set.call(this, handler === null ? null : function (event) { record("port message", event.data); return handler.call(this, event); });
    },
  });
  const Channel = window.MessageChannel;
  window.MessageChannel = function () { const channel = new Channel(); ports.push(channel.port1); return channel; };

  const originalFetch = window.fetch;
  window.fetch = async function (input, init) {
    record("fetch", String(input instanceof Request ? input.url : input), init && init.body);
    const response = await originalFetch.call(this, input, init);
    response.clone().text().then((body) => record("fetch response", body), () => {});
    return response;
  };
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (...args) { record("xhr.open", args[0], String(args[1])); return open.apply(this, args); };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (body) {
    record("xhr.send", body);
    this.addEventListener("load", () => record("xhr response", this.responseText));
    return send.call(this, body);
  };
  const setItem = Storage.prototype.setItem;
  Storage.prototype.setItem = function (key, value) { record("storage.setItem", key, value); return setItem.call(this, key, value); };
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    const original = console[level];
    console[level] = function (...args) { record("console." + level, ...args); return original.apply(this, args); };
  }
  window.addEventListener("error", (event) => record("error", event.message), true);
  window.addEventListener("unhandledrejection", (event) => record("unhandledrejection", String(event.reason)), true);
})();`;
}

/** The final state of what the page holds: its DOM (with input values), storage and cookies. */
export function pageStateScript(): string {
  return `(() => {
  const inputs = [...document.querySelectorAll("input, textarea")].map((input) => input.value);
  const storage = (store) => Object.keys(store).map((key) => key + "=" + store.getItem(key));
  return [document.documentElement.outerHTML, ...inputs, ...storage(localStorage), ...storage(sessionStorage), document.cookie];
})()`;
}
