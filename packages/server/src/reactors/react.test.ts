import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";
import { addressesOf, urlHost } from "../../test/special-ranges.js";
import { IPV4_SPECIAL_RANGES, IPV6_SPECIAL_RANGES } from "../net/special-ranges.js";

const CARD = "4242424242424242";

describe.skipIf(STORE_UNAVAILABLE)("POST /reactors/{id}/react", () => {
  let server: TestServer;
  /** Uses and reads /pci/ revealed; nothing on /pii/. */
  let caller: string;
  let callerId: string;
  /** Holds token:read only: may not invoke reactors. */
  let reader: string;
  /** The reactors' own Application: reads everything masked, creates anywhere. */
  let reactorApp: { id: string };
  let card: { id: string };
  let bank: { id: string };
  let ssn: { id: string };

  async function application(body: unknown): Promise<{ id: string; key: string }> {
    const response = await server.request("POST", "/applications", { body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function token(body: unknown): Promise<{ id: string }> {
    const response = await server.request("POST", "/tokens", { key: caller, body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function reactor(code: string, withApplication = true): Promise<string> {
    const response = await server.request("POST", "/reactors", {
      body: {
        name: "reactor under test",
        code,
        configuration: { region: "eu", secret_api_key: "sk_test_123" },
        ...(withApplication && { application: { id: reactorApp.id } }),
      },
    });
    expect(response.status, response.text).toBe(201);
    return response.body.id as string;
  }

  const react = (id: string, body: unknown, key = caller) =>
    server.request("POST", `/reactors/${id}/react`, { key, body });

  beforeAll(async () => {
    server = await startTestServer({ TESSERA_REACTOR_TIMEOUT_MS: "1500" });
    const callerApp = await application({
      name: "caller",
      type: "private",
      rules: [
        {
          priority: 1,
          container: "/pci/",
          transform: "reveal",
          permissions: ["token:use", "token:create", "token:read"],
        },
        { priority: 2, container: "/pii/", transform: "reveal", permissions: ["token:create"] },
      ],
    });
    caller = callerApp.key;
    callerId = callerApp.id;
    reader = (await application({ name: "reader", type: "private", permissions: ["token:read"] })).key;
    reactorApp = await application({
      name: "reactor identity",
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "mask", permissions: ["token:read", "token:create"] },
      ],
    });
    card = await token({ type: "card_number", data: CARD, containers: ["/pci/"] });
    bank = await token({
      type: "token",
      data: { routing_number: "110000000", account_number: "000123456789" },
      containers: ["/pci/bank/"],
    });
    ssn = await token({ type: "social_security_number", data: "123-45-6789", containers: ["/pii/"] });
  });
  afterAll(() => server?.close());

  it("runs the code with detokenized args (whole, interpolated, complex, nested) and its configuration", async () => {
    const id = await reactor(
      "module.exports = async ({ args, configuration }) => ({ raw: { args, configuration } });",
    );
    const response = await react(id, {
      args: {
        card: `{{ ${card.id} }}`,
        sentence: `charge {{${card.id}}} now`,
        nested: [{ bank: `{{ ${bank.id} }}`, plain: 7 }],
      },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      raw: {
        args: {
          card: CARD,
          sentence: `charge ${CARD} now`,
          nested: [{ bank: { routing_number: "110000000", account_number: "000123456789" }, plain: 7 }],
        },
        configuration: { region: "eu", secret_api_key: "sk_test_123" },
      },
    });
  });

  it("tokenizes the reactor's tokenize output as its Application, and gives svc that Application's view", async () => {
    const id = await reactor(`module.exports = async ({ args, svc }) => {
      const seen = await svc.tokens.get(args.cardId);
      return { raw: { seen: seen.data }, tokenize: { copy: { type: "token", data: args.card, containers: ["/pci/"] } } };
    };`);
    const response = await react(id, { args: { card: `{{ ${card.id} }}`, cardId: card.id } });
    expect(response.status, response.text).toBe(200);
    // The reactor's Application reads cards masked, whatever the caller may see.
    expect(response.body.raw).toEqual({ seen: "XXXXXXXXXXXX4242" });
    const copy = response.body.tokens.copy;
    expect(copy).toMatchObject({ type: "token", containers: ["/pci/"], created_by: reactorApp.id });
    const stored = await server.request("GET", `/tokens/${copy.id}`, { key: caller });
    expect(stored.body.data).toBe(CARD);
  });

  it("gives svc = bt = null to a reactor without an Application, and tokenizes its output as the caller", async () => {
    const id = await reactor(
      `module.exports = async ({ svc, bt }) =>
        ({ raw: { svc, bt }, tokenize: { t: { type: "token", data: "x", containers: ["/pci/"] } } });`,
      false,
    );
    const response = await react(id, {});
    expect(response.status, response.text).toBe(200);
    expect(response.body.raw).toEqual({ svc: null, bt: null });
    expect(response.body.tokens.t.created_by).toBe(callerId);
  });

  it("answers what reactor errors choose, with host paths scrubbed", async () => {
    const id = await reactor(`
      const { BadRequestError, RateLimitError, CustomHttpResponseError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
      module.exports = async ({ args }) => {
        if (args.kind === "bad") throw new BadRequestError({ card: ["expired"] });
        if (args.kind === "rate") throw new RateLimitError("slow down");
        if (args.kind === "custom") throw new CustomHttpResponseError({ status: 418, headers: { "X-Reactor": "teapot" }, body: { brewing: true } });
        if (args.kind === "redirect") throw new CustomHttpResponseError({ status: 307, headers: { Location: "https://attacker.example/" }, body: {} });
        if (args.kind === "object") throw { status: 402, message: "not a reactor error class" };
        throw new Error("failed reading /opt/tessera/node_modules/x.js and file:///srv/app/harness.js");
      };`);
    expectProblem(await react(id, { args: { kind: "bad" } }), 400, {
      code: "reactor-error",
      detail: /^Bad Request$/,
      errors: { card: ["expired"] },
    });
    expectProblem(await react(id, { args: { kind: "rate" } }), 429, {
      code: "reactor-error",
      errors: { error: ["slow down"] },
    });
    const custom = await react(id, { args: { kind: "custom" } });
    expect(custom.status).toBe(418);
    expect(custom.headers.get("x-reactor")).toBe("teapot");
    expect(custom.body).toEqual({ brewing: true });
    // A client that follows redirects would send its API key wherever the reactor pointed it.
    const redirect = await react(id, { args: { kind: "redirect" } });
    expectProblem(redirect, 500, {
      code: "reactor-error",
      errors: {
        status: ["must be a final status from 200 to 599 and not a redirect (3xx); got 307"],
        "headers.Location": ["is not a header a reactor may set"],
      },
    });
    expect(redirect.headers.get("location")).toBeNull();
    // Only the error classes choose a status: anything else thrown is a 500.
    expectProblem(await react(id, { args: { kind: "object" } }), 500, {
      code: "reactor-error",
      detail: /^Reactor Runtime Error$/,
      errors: { error: ["not a reactor error class"] },
    });
    const plain = await react(id, { args: { kind: "error" } });
    expectProblem(plain, 500, {
      code: "reactor-error",
      errors: { error: ["failed reading <internal> and <internal>"] },
    });
  });

  it("keeps custom responses to a final status and headers that describe the body: the connection, the origin and the caller's browser stay Tessera's", async () => {
    const id = await reactor(`
      const { BadRequestError, CustomHttpResponseError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
      class Hijack extends BadRequestError {
        constructor() { super({ card: ["x"] }); this.status = 101; }
      }
      module.exports = async ({ args }) => {
        if (args.subclass) throw new Hijack();
        throw new CustomHttpResponseError(args.response);
      };`);
    const refused = async (response: unknown, errors: Record<string, string[]>) => {
      const answer = await react(id, { args: { response } });
      expectProblem(answer, 500, {
        code: "reactor-error",
        detail: /^The reactor's custom response was refused$/,
        errors,
      });
      for (const header of ["set-cookie", "location", "refresh", "strict-transport-security", "upgrade"]) {
        expect(answer.headers.get(header), header).toBeNull();
      }
      expect(answer.headers.get("access-control-allow-origin")).toBeNull();
      expect(answer.headers.get("content-security-policy")).toBeNull();
    };
    const notFinal = (status: number) => [
      `must be a final status from 200 to 599 and not a redirect (3xx); got ${status}`,
    ];
    const notAllowed = ["is not a header a reactor may set"];

    // 1xx would switch or confuse the protocol of the API connection itself.
    await refused(
      { status: 101, headers: { Upgrade: "websocket", Connection: "Upgrade" }, body: {} },
      {
        status: notFinal(101),
        "headers.Upgrade": notAllowed,
        "headers.Connection": notAllowed,
      },
    );
    await refused({ status: 100, body: {} }, { status: notFinal(100) });
    for (const status of [300, 301, 302, 303, 304, 307, 308]) {
      await refused(
        { status, headers: { Location: "https://attacker.example/" }, body: {} },
        {
          status: notFinal(status),
          "headers.Location": notAllowed,
        },
      );
    }
    await refused({ status: 600, body: {} }, { status: notFinal(600) });
    await refused(
      { status: "200", body: {} },
      { status: ['must be a final status from 200 to 599 and not a redirect (3xx); got "200"'] },
    );
    await refused(
      { status: 204, body: { content: true } },
      {
        body: ["must be absent with status 204, which has no content"],
      },
    );
    await refused(
      { status: 205, body: "reset" },
      {
        body: ["must be absent with status 205, which has no content"],
      },
    );
    // Headers that act on the caller's browser, the origin's security policy or a proxy in front of Tessera.
    const refusedHeaders: Record<string, string> = {
      "Set-Cookie": "session=attacker; Path=/",
      Location: "https://attacker.example/",
      Refresh: "0; url=https://attacker.example/",
      "Strict-Transport-Security": "max-age=0",
      "Content-Security-Policy": "script-src *",
      "Access-Control-Allow-Origin": "https://attacker.example",
      "Access-Control-Allow-Credentials": "true",
      "Access-Control-Expose-Headers": "*",
      "X-Frame-Options": "ALLOWALL",
      "X-Content-Type-Options": "none",
      "X-XSS-Protection": "0",
      "X-Accel-Redirect": "/internal/master.key",
      "X-Sendfile": "/etc/passwd",
      "X-Forwarded-Host": "attacker.example",
      "Content-Length": "1",
      "Transfer-Encoding": "chunked",
      Link: "<https://attacker.example/x.js>; rel=preload",
    };
    for (const [name, value] of Object.entries(refusedHeaders)) {
      await refused(
        { status: 200, headers: { [name]: value }, body: {} },
        { [`headers.${name}`]: notAllowed },
      );
    }
    await refused(
      { status: 200, headers: { "Content-Type": "text/html" }, body: "<script>alert(1)</script>" },
      {
        "headers.Content-Type": ["must be a JSON media type (application/json or application/…+json)"],
      },
    );
    await refused(
      { status: 200, headers: { "X-Note": "a\r\nSet-Cookie: x=1" }, body: {} },
      {
        "headers.X-Note": ["must not contain control characters"],
      },
    );
    await refused(
      { status: 200, headers: ["X-Note", "1"], body: {} },
      {
        headers: ["must be an object of header names to values"],
      },
    );

    // What remains allowed: any final status, headers describing the body and the reactor's own X- headers.
    const allowed = await react(id, {
      args: {
        response: {
          status: 402,
          headers: {
            "Content-Type": "application/vnd.processor+json; charset=utf-8",
            "Cache-Control": "no-store",
            "Content-Language": "en",
            "X-Processor-Decline-Code": "insufficient_funds",
            "X-RateLimit-Remaining": 7,
          },
          body: { declined: true },
        },
      },
    });
    expect(allowed.status, allowed.text).toBe(402);
    expect(allowed.body).toEqual({ declined: true });
    expect(allowed.headers.get("content-type")).toBe("application/vnd.processor+json; charset=utf-8");
    expect(allowed.headers.get("cache-control")).toBe("no-store");
    expect(allowed.headers.get("content-language")).toBe("en");
    expect(allowed.headers.get("x-processor-decline-code")).toBe("insufficient_funds");
    expect(allowed.headers.get("x-ratelimit-remaining")).toBe("7");
    const noContent = await react(id, {
      args: { response: { status: 204, headers: { "X-Reactor": "done" } } },
    });
    expect(noContent.status, noContent.text).toBe(204);
    expect(noContent.text).toBe("");
    expect(noContent.headers.get("x-reactor")).toBe("done");

    // The error classes answer their class's status, whatever `status` the thrown object was given.
    expectProblem(await react(id, { args: { subclass: true } }), 400, {
      code: "reactor-error",
      errors: { card: ["x"] },
    });
  });

  it("maps every error class as wire-format §7 says, a subclass as its parent, an Error in errors by its message", async () => {
    const id = await reactor(`
      const errors = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
      class DeclinedError extends errors.InvalidPaymentMethodError {}
      module.exports = async ({ args }) => {
        if (args.kind === "subclass") throw new DeclinedError({ card: ["declined"] });
        if (args.kind === "wrapped") throw new errors.ReactorRuntimeError(new TypeError("upstream said no"));
        if (args.kind === "empty") throw new errors.ServiceUnavailableError();
        if (args.kind === "rfc") return { raw: new errors.AuthorizationError("no").toRFC7807() };
        throw new errors[args.kind](["first", { second: 2 }]);
      };`);
    const classes: [string, number, string][] = [
      ["AuthenticationError", 401, "Authentication Failed"],
      ["AuthorizationError", 403, "Forbidden"],
      ["BadRequestError", 400, "Bad Request"],
      ["InvalidPaymentMethodError", 402, "Invalid Payment Method"],
      ["InvalidReactorConfigurationError", 400, "Invalid Reactor Configuration"],
      ["RateLimitError", 429, "Rate Limit Exceeded"],
      ["ReactorRuntimeError", 500, "Reactor Runtime Error"],
      ["ServiceUnavailableError", 503, "Service Unavailable"],
    ];
    for (const [kind, status, detail] of classes) {
      const response = await react(id, { args: { kind } });
      // An array becomes errors.error, its objects as JSON text.
      expectProblem(response, status, {
        code: "reactor-error",
        detail: new RegExp(`^${detail}$`),
        errors: { error: ["first", '{"second":2}'] },
      });
    }
    expectProblem(await react(id, { args: { kind: "subclass" } }), 402, {
      code: "reactor-error",
      detail: /^Invalid Payment Method$/,
      errors: { card: ["declined"] },
    });
    expectProblem(await react(id, { args: { kind: "wrapped" } }), 500, {
      code: "reactor-error",
      detail: /^Reactor Runtime Error$/,
      errors: { error: ["upstream said no"] },
    });
    expectProblem(await react(id, { args: { kind: "empty" } }), 503, {
      code: "reactor-error",
      errors: {
        error: ["Something went wrong. Please try again. If the problem persists, please contact support."],
      },
    });
    const rfc = await react(id, { args: { kind: "rfc" } });
    expect(rfc.status, rfc.text).toBe(200);
    expect(rfc.body.raw).toEqual({ detail: "Forbidden", status: 403, errors: "no" });
  });

  it("never lets module state cross Applications: another caller of the same reactor gets a worker of its own", async () => {
    const id = await reactor(`
      let kept;
      module.exports = async ({ args }) => {
        const before = kept;
        if (args.card !== undefined) kept = args.card;
        globalThis.lastCard ??= args.card;
        return { raw: { before: before ?? null, global: globalThis.lastCard ?? null, pid: Deno.pid } };
      };`);
    // May use tokens of another container only: it may never see the card.
    const outsider = await application({
      name: "outsider",
      type: "private",
      rules: [{ priority: 1, container: "/elsewhere/", transform: "reveal", permissions: ["token:use"] }],
    });
    const first = await react(id, { args: { card: `{{ ${card.id} }}` } });
    expect(first.status, first.text).toBe(200);
    expect(first.body.raw).toMatchObject({ before: null, global: CARD });
    // The same Application keeps its warm worker and what its code kept there, as a warm function would.
    const again = await react(id, { args: {} });
    expect(again.body.raw).toEqual({ before: CARD, global: CARD, pid: first.body.raw.pid });

    const theirs = await react(id, { args: {} }, outsider.key);
    expect(theirs.status, theirs.text).toBe(200);
    expect(theirs.body.raw).toMatchObject({ before: null, global: null });
    expect(theirs.body.raw.pid).not.toBe(first.body.raw.pid);
    expect(theirs.text).not.toContain(CARD);
  });

  it("answers 500 reactor-failed when the code ends its worker or cannot load, and runs on a fresh worker next", async () => {
    const id = await reactor(`module.exports = async ({ args }) => {
      if (args.exit) process.exit(3);
      return { raw: "alive" };
    };`);
    expectProblem(await react(id, { args: { exit: true } }), 500, {
      code: "reactor-failed",
      detail: /^The reactor failed: the reactor's worker exited with status 3\.$/,
    });
    const again = await react(id, { args: {} });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual({ raw: "alive" });

    const notAFunction = await reactor("module.exports = { handler: async () => ({}) };");
    expectProblem(await react(notAFunction, {}), 500, {
      code: "reactor-failed",
      detail: /^The reactor's code failed to load: The reactor code must export a function$/,
    });
    const throwsAtLoad = await reactor('throw new Error("no config in /srv/app/config.json");');
    expectProblem(await react(throwsAtLoad, {}), 500, {
      code: "reactor-failed",
      detail: /^The reactor's code failed to load: no config in <internal>$/,
    });
  });

  it("answers a 50 MB result with 500 reactor-failed at the default limits, and keeps serving", async () => {
    const id = await reactor(
      `module.exports = async ({ args }) => ({ raw: args.huge ? "x".repeat(50 * 1024 * 1024) : "small" });`,
    );
    // On an instance with the default timeout: at this file's 1.5 s, a loaded machine can time the worker out
    // (504) before either limit stops it.
    const atDefaults = await startTestServer({}, { sharing: server });
    try {
      const reactAt = (args: unknown) =>
        atDefaults.request("POST", `/reactors/${id}/react`, { key: caller, body: { args } });
      const huge = await reactAt({ huge: true });
      // Which limit stops it first depends on how fast the worker runs: the 8 MiB cap on what it writes, or its
      // memory (the string and its JSON frame together come close to the 128 MiB heap). Either way it is ended.
      expectProblem(huge, 500, {
        code: "reactor-failed",
        detail:
          /^The reactor failed: the reactor(?:'s output exceeded 8388608 bytes| ran out of memory.*| used more than 384 MiB of memory)\.$/,
      });
      expect(huge.text.length).toBeLessThan(4096);
      const small = await reactAt({ huge: false });
      expect(small.status, small.text).toBe(200);
      expect(small.body).toEqual({ raw: "small" });
    } finally {
      await atDefaults.close();
    }
  });

  it("answers 504 when the code runs past the timeout, while other requests are served", async () => {
    const id = await reactor("module.exports = async () => { while (true) {} };");
    const spinning = react(id, {});
    const meanwhile = await server.request("GET", `/tokens/${card.id}`, { key: caller });
    expect(meanwhile.status).toBe(200);
    expectProblem(await spinning, 504, { code: "reactor-timeout", detail: /within 1500 ms/ });
  });

  it("refuses tokens the caller may not use, unknown tokens, too many tokens and callers without token:use", async () => {
    const id = await reactor("module.exports = async ({ args }) => ({ raw: args });");
    expectProblem(await react(id, { args: { ssn: `{{ ${ssn.id} }}` } }), 403, {
      code: "forbidden",
      detail: new RegExp(`may not use token ${ssn.id}`),
    });
    const unknown = "0190f0a0-0000-7000-8000-000000000000";
    expectProblem(await react(id, { args: { x: `{{ ${unknown} }}` } }), 400, {
      errors: { body: [`token ${unknown} does not exist`] },
    });
    const many = Array.from(
      { length: 101 },
      (_, i) => `{{ 0190f0a0-0000-7000-8000-${String(i).padStart(12, "0")} }}`,
    );
    expectProblem(await react(id, { args: { many } }), 400, {
      errors: { body: ["may reference at most 100 tokens"] },
    });
    expectProblem(await react(id, { args: {} }, reader), 403, { detail: /lacks the permission token:use/ });
    // The prefix of the credentials the server issues to itself buys nothing without one actually issued.
    expectProblem(await react(id, { args: {} }, `tsi_${"A".repeat(43)}`), 401, { code: "unauthenticated" });
    expectProblem(
      await react(id, {
        args: {},
        callback_url: "https://example.com/a",
        callbackUrl: "https://example.com/b",
      }),
      400,
      { code: "validation-failed", errors: { callbackUrl: ["differs from callback_url; send one of them"] } },
    );
  });

  it("refuses a callback URL in every special-purpose IPv4 and IPv6 range", async () => {
    const id = await reactor("module.exports = async () => ({ raw: 1 });");
    for (const range of [...IPV4_SPECIAL_RANGES, ...IPV6_SPECIAL_RANGES]) {
      const callback = `http://${urlHost(addressesOf(range).inside)}/hook`;
      expectProblem(await react(id, { callback_url: callback }), 400, {
        code: "validation-failed",
        errors: { callback_url: ["must not point to a private, loopback or link-local address"] },
      });
    }
  });

  it("answers 404 for a missing reactor and for another tenant's", async () => {
    const other = await server.request("POST", "/tenants", { body: { name: "other tenant" } });
    expect(other.status, other.text).toBe(201);
    const theirs = await server.request("POST", "/reactors", {
      key: other.body.application.key,
      body: { name: "theirs", code: "module.exports = async () => ({ raw: 'theirs' });", configuration: {} },
    });
    expect(theirs.status, theirs.text).toBe(201);
    // Looked up by its owner first, so that a lookup kept in memory would be there to be found.
    const owned = await server.request("GET", `/reactors/${theirs.body.id}`, {
      key: other.body.application.key,
    });
    expect(owned.status, owned.text).toBe(200);
    expectProblem(await react(theirs.body.id, {}), 404, { code: "not-found" });
    expectProblem(await react("0190f0a0-0000-7000-8000-000000000001", {}), 404, { code: "not-found" });
  });

  it("runs what another process changed, and refuses what it deleted, from the next react on", async () => {
    // The CLI or a second server on the same store writes through its own connection (storage/versioned-cache.ts).
    const id = await reactor("module.exports = async () => ({ raw: 'before' });");
    expect((await react(id, {})).body).toEqual({ raw: "before" });
    const other = server.database.open();
    try {
      await other.db
        .updateTable("reactors")
        .set((eb) => ({
          code: "module.exports = async () => ({ raw: 'after' });",
          version: eb("version", "+", 1),
        }))
        .where("id", "=", id)
        .execute();
      const changed = await react(id, {});
      expect(changed.status, changed.text).toBe(200);
      expect(changed.body).toEqual({ raw: "after" });
      await other.db.deleteFrom("reactors").where("id", "=", id).execute();
      expectProblem(await react(id, {}), 404, { code: "not-found" });
    } finally {
      await other.close();
    }
  });
});
