import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";
import { TOKEN_PERMISSIONS, type TokenPermission } from "../access/permissions.js";
import { TRANSFORMS } from "../access/rules.js";

const SECRET = "s3cretvalue7781";
const MASKED = `${"X".repeat(SECRET.length - 4)}7781`;
const MASK = "{{ data | reveal_last: 4 }}";

describe.skipIf(STORE_UNAVAILABLE)("POST /access/explain", () => {
  let server: TestServer;
  /** Holds every token permission everywhere (implicit rules): makes the tokens the tests explain. */
  let writer: string;
  let backend: { id: string; key: string };
  let token: { id: string };

  async function application(body: unknown): Promise<{ id: string; key: string }> {
    const response = await server.request("POST", "/applications", { body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function createToken(containers: string[], key = writer): Promise<{ id: string }> {
    const response = await server.request("POST", "/tokens", {
      key,
      body: { data: SECRET, mask: MASK, containers },
    });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  const explain = (body: unknown, key?: string) =>
    server.request("POST", "/access/explain", { body, ...(key !== undefined && { key }) });

  beforeAll(async () => {
    server = await startTestServer();
    writer = (await application({ name: "writer", type: "private", permissions: [...TOKEN_PERMISSIONS] }))
      .key;
    backend = await application({
      name: "backend",
      type: "private",
      permissions: ["token:search"],
      rules: [
        { priority: 30, container: "/", transform: "redact", permissions: ["token:read"] },
        {
          description: "high-risk cards",
          priority: 10,
          container: "/pci/high/",
          transform: "reveal",
          permissions: ["token:read"],
        },
        { priority: 20, container: "/pci/", transform: "mask", permissions: ["token:search", "token:use"] },
      ],
    });
    token = await createToken(["/pci/low/"]);
  });
  afterAll(() => server?.close());

  it("names the deciding rule, its index and transform, and every rule tried before it, without token data", async () => {
    const response = await explain({
      application_id: backend.id,
      token_id: token.id,
      permission: "token:read",
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      application: { id: backend.id, name: "backend", type: "private" },
      permission: "token:read",
      token_id: token.id,
      containers: ["/pci/low/"],
      allowed: true,
      transform: "redact",
      decided_by: {
        source: "rule",
        index: 2,
        priority: 30,
        container: "/",
        transform: "redact",
        permissions: ["token:read"],
      },
      passed_over: [
        {
          source: "rule",
          index: 0,
          priority: 10,
          description: "high-risk cards",
          container: "/pci/high/",
          transform: "reveal",
          permissions: ["token:read"],
          reason: "container",
          detail: "rules[0] (priority 10): its container /pci/high/ covers none of /pci/low/",
        },
        {
          source: "rule",
          index: 1,
          priority: 20,
          container: "/pci/",
          transform: "mask",
          permissions: ["token:search", "token:use"],
          reason: "permission",
          detail: "rules[1] (priority 20): it holds token:search, token:use, not token:read",
        },
      ],
      summary: "token:read allowed by rules[2] (priority 30): redact.",
    });
    expect(response.text).not.toContain("7781");
  });

  it("explains a token that would lie in containers, through a top-level permission, and a denial", async () => {
    const search = await explain({
      application_id: backend.id,
      containers: ["/PII/"],
      permission: "token:search",
    });
    expect(search.status, search.text).toBe(200);
    expect(search.body).toMatchObject({
      containers: ["/pii/"],
      allowed: true,
      transform: "mask",
      decided_by: { source: "permission", container: "/", transform: "mask", permissions: ["token:search"] },
      summary: "token:search allowed by the top-level permission token:search: mask.",
    });
    expect(search.body.decided_by).not.toHaveProperty("index");
    expect(search.body).not.toHaveProperty("token_id");

    const use = await explain({ application_id: backend.id, containers: ["/pii/"], permission: "token:use" });
    expect(use.status).toBe(200);
    expect(use.body).toMatchObject({
      allowed: false,
      summary: "token:use denied: no rule of backend holding it covers any of /pii/.",
    });
    expect(use.body).not.toHaveProperty("transform");
    expect(use.body).not.toHaveProperty("decided_by");
    expect(use.body.passed_over.map((p: { reason: string }) => p.reason)).toEqual([
      "permission",
      "container",
      "permission",
      "permission",
    ]);
  });

  it("checks a create on every container, as the create does", async () => {
    const app = await application({
      name: "pci writer",
      type: "private",
      rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:create"] }],
    });
    const response = await explain({
      application_id: app.id,
      containers: ["/pci/a/", "/pii/"],
      permission: "token:create",
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({
      allowed: false,
      decided_by: { index: 0 },
      each_container: [
        { container: "/pci/a/", allowed: true, decided_by: { index: 0 } },
        { container: "/pii/", allowed: false },
      ],
      summary:
        "token:create denied: a create needs a rule on every container, and no rule of pci writer holding it covers /pii/.",
    });
    expect(response.body).not.toHaveProperty("transform");
    const create = await server.request("POST", "/tokens", {
      key: app.key,
      body: { data: "x", containers: ["/pci/a/", "/pii/"] },
    });
    expectProblem(create, 403);
  });

  it("records an explanation of a token in the audit log, and none of containers alone", async () => {
    const before = await server.request("GET", "/logs?action=token.explain&size=100");
    await explain({ application_id: backend.id, token_id: token.id, permission: "token:use" });
    await explain({ application_id: backend.id, containers: ["/pci/"], permission: "token:use" });
    const after = await server.request("GET", "/logs?action=token.explain&size=100");
    expect(after.body.pagination.total_items).toBe(before.body.pagination.total_items + 1);
    expect(after.body.data[0]).toMatchObject({
      action: "token.explain",
      entity_type: "token",
      entity_id: token.id,
      details: { application_id: backend.id, permission: "token:use", allowed: true },
    });
  });

  it.each([
    [{ application_id: "x", token_id: "t", permission: "token:read" }, "/application_id"],
    [{ token_id: "t", permission: "token:read" }, "application_id"],
    [{ application_id: "00000000-0000-4000-8000-000000000000", token_id: "t" }, "permission"],
    [
      { application_id: "00000000-0000-4000-8000-000000000000", token_id: "t", permission: "reactor:read" },
      "/permission",
    ],
    [
      { application_id: "00000000-0000-4000-8000-000000000000", containers: [], permission: "token:read" },
      "/containers",
    ],
    [
      {
        application_id: "00000000-0000-4000-8000-000000000000",
        token_id: "t",
        permission: "token:read",
        x: 1,
      },
      "x",
    ],
  ])("refuses a malformed body %j with 400 naming the field", async (body, field) => {
    const response = await explain(body);
    expectProblem(response, 400, { code: "validation-failed" });
    expect(JSON.stringify(response.body.errors)).toContain(field.replace(/^\//, ""));
  });

  it("refuses a token id together with containers, neither, and a malformed container", async () => {
    const base = { application_id: backend.id, permission: "token:read" };
    expectProblem(await explain({ ...base, token_id: token.id, containers: ["/a/"] }), 400, {
      errors: { token_id: ["give token_id or containers, not both"] },
    });
    expectProblem(await explain(base), 400, { errors: { containers: ["give token_id or containers"] } });
    expectProblem(await explain({ ...base, containers: ["/a/", "no-slash"] }), 400, {
      errors: {
        "containers[1]": [
          "must be a path with a leading and a trailing slash, like /pci/high/ (letters, digits, . _ -)",
        ],
      },
    });
  });

  it("explains a session by its id: its own rules, then its authorizer's, and 404 once it cannot act", async () => {
    const page = await application({ name: "page", type: "public", permissions: ["token:create"] });
    const created = await server.request("POST", "/sessions", { key: page.key });
    const rules = [
      {
        priority: 1,
        conditions: [{ attribute: "container", operator: "starts_with", value: "/pci/" }],
        transform: "reveal",
        permissions: ["token:read"],
      },
    ];
    const authorized = await server.request("POST", "/sessions/authorize", {
      key: backend.key,
      body: { nonce: created.body.nonce, rules },
    });
    expect(authorized.status, authorized.text).toBe(200);
    const logs = await server.request("GET", `/logs?action=session.authorize&actor_id=${backend.id}`);
    const sessionId = logs.body.data[0].entity_id as string;

    const response = await explain({ session_id: sessionId, token_id: token.id, permission: "token:read" });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({
      application: { id: backend.id, name: "backend" },
      session_id: sessionId,
      allowed: true,
      transform: "redact",
      decided_by: { source: "rule", index: 0, conditions: rules[0]!.conditions, transform: "reveal" },
      passed_over: [],
      ceiling: {
        allowed: true,
        transform: "redact",
        decided_by: { container: "/", transform: "redact" },
        passed_over: [{ reason: "container" }, { reason: "permission" }],
      },
      summary:
        "token:read allowed by rules[0] (priority 1) of the session, within rules[2] (priority 30) of backend: redact.",
    });
    const elsewhere = await createToken(["/pii/"]);
    const denied = await explain({ session_id: sessionId, token_id: elsewhere.id, permission: "token:read" });
    expect(denied.body).toMatchObject({
      allowed: false,
      passed_over: [
        {
          reason: "conditions",
          detail: "rules[0] (priority 1): not every one of its conditions holds for the token",
        },
      ],
    });
    expect(denied.body).not.toHaveProperty("ceiling");

    expectProblem(
      await explain({ session_id: randomUUID(), token_id: token.id, permission: "token:read" }),
      404,
    );
    expectProblem(
      await explain({
        application_id: backend.id,
        session_id: sessionId,
        token_id: token.id,
        permission: "token:read",
      }),
      400,
      { errors: { application_id: ["give application_id or session_id, one of them"] } },
    );
    server.clock.advance(180_000);
    expectProblem(
      await explain({ session_id: sessionId, token_id: token.id, permission: "token:read" }),
      404,
    );
  });

  it("answers 404 for an unknown Application or token, another tenant's, and an expired Application", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    expectProblem(
      await explain({ application_id: missing, token_id: token.id, permission: "token:read" }),
      404,
    );
    expectProblem(
      await explain({ application_id: backend.id, token_id: "no-such-token", permission: "token:read" }),
      404,
    );

    const other = await server.request("POST", "/tenants", { body: { name: "other" } });
    expect(other.status, other.text).toBe(201);
    const otherKey = other.body.application.key as string;
    expectProblem(
      await explain({ application_id: backend.id, containers: ["/"], permission: "token:read" }, otherKey),
      404,
    );

    const expiring = await application({
      name: "expiring",
      type: "private",
      permissions: ["token:read"],
      expires_at: new Date(server.clock.now().getTime() + 1000).toISOString(),
    });
    server.clock.advance(2000);
    expectProblem(
      await explain({ application_id: expiring.id, containers: ["/"], permission: "token:read" }),
      404,
    );
  });

  it("needs application:read, and a private key is refused", async () => {
    const body = { application_id: backend.id, token_id: token.id, permission: "token:read" };
    expectProblem(await explain(body, backend.key), 403);
    expectProblem(await explain(body, null as unknown as string), 401);
  });

  describe("agrees with what the API does, for random rule sets, tokens and permissions", () => {
    const container = fc.constantFrom("/", "/pci/", "/pci/high/", "/pii/", "/pcix/");
    const grant = fc.record({
      permissions: fc.subarray([...TOKEN_PERMISSIONS]),
      rules: fc.uniqueArray(
        fc.record({
          priority: fc.integer({ min: 1, max: 40 }),
          container,
          transform: fc.constantFrom(...TRANSFORMS),
          permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }),
        }),
        { selector: (r) => r.priority, maxLength: 4 },
      ),
    });
    const tokenContainers = fc.uniqueArray(
      fc.constantFrom("/pci/", "/pci/high/x/", "/pii/", "/pcix/", "/other/"),
      {
        minLength: 1,
        maxLength: 2,
      },
    );

    let echo: string;
    beforeAll(async () => {
      const response = await server.request("POST", "/reactors", {
        body: {
          configuration: {},
          name: "echo",
          code: "module.exports = async ({ args }) => ({ raw: { value: args.value } });",
        },
      });
      expect(response.status, response.text).toBe(201);
      echo = response.body.id as string;
    });

    /** What the API showed: the transform it applied, or undefined when it refused. */
    function shown(data: unknown, present: boolean): string {
      if (!present) return "redact";
      if (data === SECRET) return "reveal";
      if (data === MASKED) return "mask";
      throw new Error(`unexpected data ${JSON.stringify(data)}`);
    }

    async function actual(permission: TokenPermission, key: string, id: string, containers: string[]) {
      const refused = (status: number) => [403, 404].includes(status);
      switch (permission) {
        case "token:read": {
          const r = await server.request("GET", `/tokens/${id}`, { key });
          if (refused(r.status)) return undefined;
          expect(r.status, r.text).toBe(200);
          return shown(r.body.data, "data" in r.body);
        }
        case "token:search": {
          const r = await server.request("POST", "/tokens/search", { key, body: { query: `id:"${id}"` } });
          if (r.status === 403) return undefined;
          expect(r.status, r.text).toBe(200);
          const [found] = r.body.data;
          return found === undefined ? undefined : shown(found.data, "data" in found);
        }
        case "token:use": {
          const r = await server.request("POST", `/reactors/${echo}/react`, {
            key,
            body: { args: { value: `{{ ${id} }}` } },
          });
          if (r.status === 403 && /shows no data/.test(r.body.detail)) return "redact";
          if (refused(r.status)) return undefined;
          expect(r.status, r.text).toBe(200);
          return shown(r.body.raw.value, true);
        }
        case "token:update": {
          const r = await server.request("PATCH", `/tokens/${id}`, {
            key,
            body: { metadata: { checked: "yes" } },
            contentType: "application/merge-patch+json",
          });
          if (refused(r.status)) return undefined;
          expect(r.status, r.text).toBe(200);
          return "allowed";
        }
        case "token:delete": {
          const r = await server.request("DELETE", `/tokens/${id}`, { key });
          if (refused(r.status)) return undefined;
          expect(r.status, r.text).toBe(204);
          return "allowed";
        }
        case "token:create": {
          const r = await server.request("POST", "/tokens", {
            key,
            body: { data: SECRET, mask: MASK, containers },
          });
          if (refused(r.status)) return undefined;
          expect(r.status, r.text).toBe(201);
          return shown(r.body.data, "data" in r.body);
        }
      }
    }

    const ORDER: TokenPermission[] = [
      "token:read",
      "token:search",
      "token:use",
      "token:update",
      "token:create",
      "token:delete",
    ];

    /** Explains each permission for `holder`, then does it with `key`: the two must agree. */
    async function agree(
      holder: Record<string, string>,
      key: string,
      id: string,
      containers: string[],
      context: unknown,
    ) {
      // Delete last: it removes the token the others act on.
      for (const permission of ORDER) {
        const subject = permission === "token:create" ? { containers } : { token_id: id };
        const explained = await explain({ ...holder, permission, ...subject });
        expect(explained.status, explained.text).toBe(200);
        const { allowed, transform } = explained.body as { allowed: boolean; transform?: string };
        const expected = !allowed
          ? undefined
          : ["token:update", "token:delete"].includes(permission)
            ? "allowed"
            : transform;
        const where = `${permission} ${JSON.stringify(context)} ${explained.body.summary}`;
        expect(await actual(permission, key, id, containers), where).toBe(expected);
      }
    }

    it("on every token permission", async () => {
      await fc.assert(
        fc.asyncProperty(grant, tokenContainers, async (g, containers) => {
          if (g.permissions.length === 0 && g.rules.length === 0) g.permissions.push("token:read");
          const app = await application({ name: "random", type: "private", ...g });
          const { id } = await createToken(containers);
          await agree({ application_id: app.id }, app.key, id, containers, { g, containers });
        }),
        { numRuns: 100, endOnFailure: true },
      );
    }, 180_000);

    // A session's condition rules: on the token's id (itself, a prefix of it, another id) or on a container.
    const conditionTemplate = fc.oneof(
      fc.record({
        attribute: fc.constant("id" as const),
        operator: fc.constantFrom("equals" as const, "starts_with" as const),
        value: fc.constantFrom("self", "prefix", "other"),
      }),
      fc.record({
        attribute: fc.constant("container" as const),
        operator: fc.constantFrom("equals" as const, "starts_with" as const),
        value: container,
      }),
    );
    const sessionGrant = fc.record({
      permissions: fc.subarray([...TOKEN_PERMISSIONS]),
      rules: fc.uniqueArray(
        fc.record({
          priority: fc.integer({ min: 1, max: 40 }),
          conditions: fc.array(conditionTemplate, { minLength: 1, maxLength: 2 }),
          transform: fc.constantFrom(...TRANSFORMS),
          permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }),
        }),
        { selector: (r) => r.priority, maxLength: 3 },
      ),
    });

    it("on session keys with condition rules, bounded by the Application that authorized them", async () => {
      const page = await application({ name: "page", type: "public", permissions: ["token:create"] });
      await fc.assert(
        fc.asyncProperty(grant, sessionGrant, tokenContainers, async (g, s, containers) => {
          // The authorizer holds everything the session asks for, or the authorization is refused (tested apart).
          const asked = [...s.permissions, ...s.rules.flatMap((r) => r.permissions)];
          const held = new Set([...g.permissions, ...g.rules.flatMap((r) => r.permissions)]);
          if (asked.length === 0) s.permissions.push("token:read");
          for (const p of [...asked, ...s.permissions]) if (!held.has(p)) g.permissions.push(p);
          g.permissions = [...new Set(g.permissions)];
          const app = await application({ name: "authorizer", type: "private", ...g });
          const { id } = await createToken(containers);
          const value = (v: string) =>
            v === "self" ? id : v === "prefix" ? id.slice(0, 10) : v === "other" ? `${id}x` : v;
          const rules = s.rules.map((r) => ({
            ...r,
            conditions: r.conditions.map((c) => ({ ...c, value: value(c.value) })),
          }));
          const session = await server.request("POST", "/sessions", { key: page.key });
          expect(session.status, session.text).toBe(201);
          const authorized = await server.request("POST", "/sessions/authorize", {
            key: app.key,
            body: { nonce: session.body.nonce, permissions: s.permissions, rules },
          });
          expect(authorized.status, authorized.text).toBe(200);
          const logs = await server.request("GET", `/logs?action=session.authorize&actor_id=${app.id}`);
          const sessionId = logs.body.data[0].entity_id as string;
          await agree({ session_id: sessionId }, session.body.session_key, id, containers, {
            g,
            s: rules,
            containers,
          });
        }),
        { numRuns: 60, endOnFailure: true },
      );
    }, 240_000);
  });
});
