import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

const CARD = "4242424242424242";
const SSN = "123-45-6789";

describe.skipIf(STORE_UNAVAILABLE)("sessions", () => {
  let server: TestServer;
  let publicKey: string;
  /** Reads /pci/ revealed and /pii/ masked; searches /pci/ and /pii/. */
  let backend: { id: string; key: string };
  /** Holds only token:create: may not hand out reads. */
  let writerOnly: { id: string; key: string };
  let card: { id: string };
  let ssn: { id: string };
  let other: { id: string };

  async function application(body: unknown, key?: string): Promise<{ id: string; key: string }> {
    const response = await server.request("POST", "/applications", { body, ...(key && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function createSession(
    key = publicKey,
  ): Promise<{ session_key: string; nonce: string; expires_at: string }> {
    const response = await server.request("POST", "/sessions", { key });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  const authorize = (body: unknown, key = backend.key) =>
    server.request("POST", "/sessions/authorize", { key, body });

  async function authorized(body: Record<string, unknown>): Promise<string> {
    const session = await createSession();
    const response = await authorize({ nonce: session.nonce, ...body });
    expect(response.status, response.text).toBe(200);
    return session.session_key;
  }

  beforeAll(async () => {
    server = await startTestServer({ TESSERA_WEBHOOK_ALLOW_PRIVATE: "true" });
    publicKey = (
      await application({
        name: "checkout page",
        type: "public",
        rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:create"] }],
      })
    ).key;
    backend = await application({
      name: "backend",
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:read", "token:search"] },
        { priority: 2, container: "/pii/", transform: "mask", permissions: ["token:read", "token:search"] },
      ],
    });
    writerOnly = await application({ name: "writer", type: "private", permissions: ["token:create"] });
    const writer = await application({
      name: "seed",
      type: "private",
      permissions: [
        "token:create",
        "token:read",
        "token:update",
        "token:delete",
        "token:search",
        "token:use",
      ],
    });
    const token = async (body: unknown) => {
      const response = await server.request("POST", "/tokens", { key: writer.key, body });
      expect(response.status, response.text).toBe(201);
      return response.body as { id: string };
    };
    card = await token({ id: "card_1", type: "card_number", data: CARD, containers: ["/pci/"] });
    ssn = await token({ type: "social_security_number", data: SSN, containers: ["/pii/"] });
    other = await token({ type: "token", data: "elsewhere", containers: ["/other/"] });
  });
  afterAll(() => server?.close());

  it("creates a session with a public key: a key_ses_ key, a nonce, and the default lifetime of 3 minutes", async () => {
    const before = server.clock.now().getTime();
    const session = await createSession();
    expect(session.session_key).toMatch(/^key_ses_[A-Za-z0-9_-]{43}$/);
    expect(session.nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Date(session.expires_at).getTime()).toBe(before + 180_000);
  });

  it("takes only a public key for creating and only a private key for authorizing", async () => {
    expectProblem(await server.request("POST", "/sessions", { key: backend.key }), 403, {
      detail: /public Application/,
    });
    expectProblem(await server.request("POST", "/sessions", {}), 403, { detail: /public Application/ });
    expectProblem(await server.request("POST", "/sessions", { key: null }), 401);
    const session = await createSession();
    expectProblem(await authorize({ nonce: session.nonce, permissions: ["token:read"] }, publicKey), 403, {
      detail: /private Application/,
    });
    expectProblem(
      await authorize({ nonce: session.nonce, permissions: ["token:read"] }, server.bootstrapKey),
      403,
    );
    // A session key never creates or authorizes sessions, whatever it was granted.
    const key = await authorized({ permissions: ["token:read"] });
    expectProblem(await server.request("POST", "/sessions", { key }), 403);
    expectProblem(
      await authorize({ nonce: (await createSession()).nonce, permissions: ["token:read"] }, key),
      403,
    );
  });

  it("is refused until authorized, and then reads within its grant and the authorizer's rules", async () => {
    const session = await createSession();
    expectProblem(await server.request("GET", `/tokens/${card.id}`, { key: session.session_key }), 401);
    const response = await authorize({ nonce: session.nonce, permissions: ["token:read"] });
    expect(response.status).toBe(200);
    expect(response.text).toBe("");
    const key = session.session_key;
    // The session's token:read masks (implicit), the backend would reveal: masked.
    const read = await server.request("GET", `/tokens/${card.id}`, { key });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data).toBe(`XXXXXXXXXXXX${CARD.slice(-4)}`);
    // Outside every rule of the authorizer: absent.
    expectProblem(await server.request("GET", `/tokens/${other.id}`, { key }), 404);
    // Not granted to the session though the backend holds it.
    expectProblem(await server.request("POST", "/tokens/search", { key, body: { query: "" } }), 403, {
      detail: /session lacks the permission token:search/,
    });
  });

  it("applies condition rules on id and container, in priority order, on read, search and list", async () => {
    const key = await authorized({
      rules: [
        {
          priority: 1,
          conditions: [{ attribute: "id", operator: "equals", value: card.id }],
          transform: "reveal",
          permissions: ["token:read", "token:search"],
        },
        {
          priority: 2,
          conditions: [{ attribute: "container", operator: "starts_with", value: "/PII/" }],
          transform: "redact",
          permissions: ["token:read", "token:search"],
        },
        {
          priority: 3,
          conditions: [{ attribute: "container", operator: "equals", value: "/other/" }],
          transform: "reveal",
          permissions: ["token:read", "token:search"],
        },
      ],
    });
    const read = await server.request("GET", `/tokens/${card.id}`, { key });
    expect(read.body.data).toBe(CARD);
    const redacted = await server.request("GET", `/tokens/${ssn.id}`, { key });
    expect(redacted.status, redacted.text).toBe(200);
    expect(redacted.body).not.toHaveProperty("data");
    // Its conditions hold, but the authorizer reaches nothing in /other/.
    expectProblem(await server.request("GET", `/tokens/${other.id}`, { key }), 404);

    const search = await server.request("POST", "/tokens/search", { key, body: { query: "" } });
    expect(search.status, search.text).toBe(200);
    expect(search.body.data.map((t: { id: string }) => t.id).sort()).toEqual([card.id, ssn.id].sort());
    expect(search.body.pagination.total_items).toBe(2);
    const list = await server.request("GET", "/tokens", { key });
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((t: { id: string }) => t.id).sort()).toEqual([card.id, ssn.id].sort());

    const narrow = await authorized({
      rules: [
        {
          priority: 1,
          conditions: [{ attribute: "id", operator: "starts_with", value: "card_" }],
          transform: "reveal",
          permissions: ["token:search", "token:read"],
        },
      ],
    });
    const found = await server.request("POST", "/tokens/search", {
      key: narrow,
      body: { query: 'container:"/*"' },
    });
    expect(found.body.data.map((t: { id: string; data: string }) => [t.id, t.data])).toEqual([
      [card.id, CARD],
    ]);
    const listed = await server.request("GET", "/tokens", { key: narrow });
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([card.id]);
    expect(listed.body.pagination.total_items).toBe(1);
  });

  it("authorizes a nonce once; an unknown, used, expired or other tenant's nonce gets one answer", async () => {
    const refused = (response: Awaited<ReturnType<typeof authorize>>) => {
      expectProblem(response, 400, {
        code: "validation-failed",
        errors: {
          nonce: ["is not a session awaiting authorization (unknown, already authorized, or expired)"],
        },
      });
      return response.body;
    };
    const grant = { permissions: ["token:read"] };
    const unknown = refused(await authorize({ nonce: "no-such-nonce", ...grant }));

    const used = await createSession();
    expect((await authorize({ nonce: used.nonce, ...grant })).status).toBe(200);
    const again = refused(await authorize({ nonce: used.nonce, ...grant }));

    const late = await createSession();
    server.clock.advance(180_001);
    const expired = refused(await authorize({ nonce: late.nonce, ...grant }));

    const tenant = await server.request("POST", "/tenants", { body: { name: "another" } });
    expect(tenant.status, tenant.text).toBe(201);
    const foreign = await application(
      { name: "foreign backend", type: "private", permissions: ["token:read"] },
      tenant.body.application.key,
    );
    const mine = await createSession();
    const crossTenant = refused(await authorize({ nonce: mine.nonce, ...grant }, foreign.key));

    const { instance: _a, ...first } = unknown;
    for (const body of [again, expired, crossTenant]) {
      const { instance: _b, ...rest } = body;
      expect(rest).toEqual(first);
    }
  });

  it("grants no more than the authorizer holds, and ends or narrows with it at the next request", async () => {
    expectProblem(
      await authorize({ nonce: (await createSession()).nonce, permissions: ["token:read"] }, writerOnly.key),
      403,
      { detail: /cannot grant permissions it does not hold: token:read/ },
    );
    expectProblem(
      await authorize(
        {
          nonce: (await createSession()).nonce,
          rules: [
            {
              priority: 1,
              conditions: [{ attribute: "id", operator: "equals", value: card.id }],
              transform: "reveal",
              permissions: ["token:use"],
            },
          ],
        },
        backend.key,
      ),
      403,
      { detail: /token:use/ },
    );

    const boss = await application({
      name: "temporary backend",
      type: "private",
      rules: [{ priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:read"] }],
    });
    const session = await createSession();
    expect((await authorize({ nonce: session.nonce, permissions: ["token:read"] }, boss.key)).status).toBe(
      200,
    );
    const key = session.session_key;
    expect((await server.request("GET", `/tokens/${card.id}`, { key })).status).toBe(200);

    // The authorizer loses /pci/: so does the session, at once.
    const narrowed = await server.request("PUT", `/applications/${boss.id}`, {
      body: {
        name: "temporary backend",
        rules: [{ priority: 1, container: "/pii/", transform: "reveal", permissions: ["token:read"] }],
      },
    });
    expect(narrowed.status, narrowed.text).toBe(200);
    expectProblem(await server.request("GET", `/tokens/${card.id}`, { key }), 404);
    expect((await server.request("GET", `/tokens/${ssn.id}`, { key })).status).toBe(200);

    expect((await server.request("DELETE", `/applications/${boss.id}`)).status).toBe(204);
    expectProblem(await server.request("GET", `/tokens/${ssn.id}`, { key }), 401);
  });

  it("stops working at expires_at at once, may be shortened or lengthened up to the maximum, and is swept", async () => {
    const session = await createSession();
    const start = server.clock.now().getTime();
    const soon = new Date(start + 60_000).toISOString();
    expect(
      (await authorize({ nonce: session.nonce, permissions: ["token:read"], expires_at: soon })).status,
    ).toBe(200);
    const key = session.session_key;
    expect((await server.request("GET", `/tokens/${card.id}`, { key })).status).toBe(200);
    server.clock.advance(60_000);
    expectProblem(await server.request("GET", `/tokens/${card.id}`, { key }), 401);

    const long = await createSession();
    const tooLate = new Date(server.clock.now().getTime() + 3_600_001).toISOString();
    expectProblem(
      await authorize({ nonce: long.nonce, permissions: ["token:read"], expires_at: tooLate }),
      400,
      {
        errors: {
          expires_at: [
            expect.stringMatching(/^must be at most 3600 s after the session was created/),
          ] as never,
        },
      },
    );
    expectProblem(
      await authorize({ nonce: long.nonce, permissions: ["token:read"], expires_at: "2000-01-01T00:00:00Z" }),
      400,
      { errors: { expires_at: ["must be in the future"] } },
    );
    const hour = new Date(server.clock.now().getTime() + 3_600_000).toISOString();
    expect(
      (await authorize({ nonce: long.nonce, permissions: ["token:read"], expires_at: hour })).status,
    ).toBe(200);
    server.clock.advance(1_800_000);
    expect((await server.request("GET", `/tokens/${card.id}`, { key: long.session_key })).status).toBe(200);

    // Swept: the expired sessions' rows go (the sweeper runs every 200 ms in tests).
    const store = server.database.open();
    try {
      const expiredRows = async () =>
        Number(
          (
            await store.db
              .selectFrom("sessions")
              .select((eb) => eb.fn.countAll().as("n"))
              .where("expires_at", "<=", server.clock.now().toISOString())
              .executeTakeFirstOrThrow()
          ).n,
        );
      await expect.poll(expiredRows, { timeout: 20_000, interval: 100 }).toBe(0);
      const left = await store.db.selectFrom("sessions").select("id").execute();
      expect(left.length).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it("stores the session key and the nonce only as hashes", async () => {
    const session = await createSession();
    const store = server.database.open();
    try {
      const rows = await store.db.selectFrom("sessions").selectAll().execute();
      const text = JSON.stringify(rows);
      expect(text).not.toContain(session.session_key);
      expect(text).not.toContain(session.session_key.slice("key_ses_".length));
      expect(text).not.toContain(session.nonce);
    } finally {
      await store.close();
    }
  });

  it("refuses grants a session cannot have, naming every field", async () => {
    const nonce = (await createSession()).nonce;
    expectProblem(await authorize({ nonce }), 400, {
      errors: { permissions: ["permissions or rules must be non-empty"] },
    });
    expectProblem(
      await authorize({
        nonce,
        permissions: ["application:read"],
        rules: [
          { priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:read"] },
          {
            priority: 1,
            conditions: [{ attribute: "container", operator: "equals", value: "pci" }],
            transform: "reveal",
            permissions: ["token:read"],
          },
        ],
      }),
      400,
      {
        errors: {
          "permissions[0]": [
            "application:read cannot be granted to a session (token permissions of private Applications only)",
          ],
          "rules[0].container": ["a session's rules are scoped by conditions, not by a container"],
          "rules[0].conditions": ["must hold at least one condition"],
          "rules[1].priority": ["priority 1 is used by another rule"],
          "rules[1].conditions[0].value": [
            "must be a path with a leading and a trailing slash, like /pci/high/ (letters, digits, . _ -)",
          ],
        },
      },
    );
    // Nothing was half-done: the nonce still authorizes.
    expect((await authorize({ nonce, permissions: ["token:read"] })).status).toBe(200);
  });

  it("records creation, authorization and every use of the session in the audit log", async () => {
    const session = await createSession();
    await authorize({ nonce: session.nonce, permissions: ["token:read"] });
    expect((await server.request("GET", `/tokens/${card.id}`, { key: session.session_key })).status).toBe(
      200,
    );
    const logs = async (action: string) =>
      (await server.request("GET", `/logs?action=${action}&size=100`)).body.data as {
        actor_id?: string;
        entity_id?: string;
        details?: Record<string, unknown>;
        rule?: { container: string };
      }[];
    const created = (await logs("session.create")).at(-1) ?? (await logs("session.create"))[0];
    expect(created).toBeDefined();
    const sessionId = (await logs("session.authorize")).find((e) => e.actor_id === backend.id)?.entity_id;
    expect(sessionId).toBeDefined();
    const reads = (await logs("token.read")).filter((e) => e.details?.session_id === sessionId);
    expect(reads).toHaveLength(1);
    expect(reads[0]).toMatchObject({
      actor_id: backend.id,
      entity_id: card.id,
      rule: { container: "/pci/" },
    });
    expect(JSON.stringify(await logs("session.create"))).not.toContain(session.session_key);
  });

  it("keeps a session's idempotency keys apart from its authorizer's: it never gets an answer kept for it", async () => {
    const headers = { "svc-idempotency-key": "same-key-for-both" };
    const body = { type: "token", data: "idempotent", containers: ["/pci/"] };
    const writer = await application({
      name: "writing backend",
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:create", "token:read"] },
      ],
    });
    const first = await server.request("POST", "/tokens", { key: writer.key, body, headers });
    expect(first.status, first.text).toBe(201);
    const session = await createSession();
    expect(
      (
        await authorize(
          {
            nonce: session.nonce,
            rules: [
              {
                priority: 1,
                conditions: [{ attribute: "container", operator: "starts_with", value: "/pci/" }],
                transform: "redact",
                permissions: ["token:create"],
              },
            ],
          },
          writer.key,
        )
      ).status,
    ).toBe(200);
    const second = await server.request("POST", "/tokens", { key: session.session_key, body, headers });
    expect(second.status, second.text).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.body).not.toHaveProperty("data");
    expect(second.headers.get("idempotent-replayed")).toBeNull();
  });

  it("never shows a session its authorizer's asynchronous invocations", async () => {
    const reactor = await server.request("POST", "/reactors", {
      body: {
        name: "echo",
        code: "module.exports = async ({ args }) => ({ raw: args });",
        configuration: {},
      },
    });
    expect(reactor.status, reactor.text).toBe(201);
    const invoker = await application({ name: "invoker", type: "private", permissions: ["token:use"] });
    const invoked = await server.request("POST", `/reactors/${reactor.body.id}/react`, {
      key: invoker.key,
      body: {
        args: { secret: "derived from the invoker's tokens" },
        callback_url: "http://127.0.0.1:9/hook",
      },
    });
    expect(invoked.status, invoked.text).toBe(202);
    const path = `/reactors/${reactor.body.id}/invocations/${invoked.body.id}`;
    expect((await server.request("GET", path, { key: invoker.key })).status).toBe(200);
    const session = await createSession();
    const authorized = await authorize({ nonce: session.nonce, permissions: ["token:use"] }, invoker.key);
    expect(authorized.status, authorized.text).toBe(200);
    expectProblem(await server.request("GET", path, { key: session.session_key }), 404);
  });

  it("decides a session's create on the id the caller gave, never on a generated one, in the check and the answer", async () => {
    const maker = await application({
      name: "maker",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create"] }],
    });
    const reference = await server.request("POST", "/tokens", {
      key: maker.key,
      body: { type: "card_number", data: CARD },
    });
    // Generated ids (UUIDv7) made now share their first characters, the time.
    const prefix = (reference.body.id as string).slice(0, 6);
    const session = await createSession();
    const authorized = await authorize(
      {
        nonce: session.nonce,
        permissions: ["token:create"],
        rules: [
          {
            priority: 1,
            conditions: [{ attribute: "id", operator: "starts_with", value: prefix }],
            transform: "redact",
            permissions: ["token:create"],
          },
        ],
      },
      maker.key,
    );
    expect(authorized.status, authorized.text).toBe(200);
    const created = await server.request("POST", "/tokens", {
      key: session.session_key,
      body: { type: "card_number", data: CARD },
    });
    expect(created.status, created.text).toBe(201);
    expect((created.body.id as string).startsWith(prefix)).toBe(true);
    // The implicit token:create rule decided (masked), as POST /access/explain says; the id rule did not.
    expect(created.body.data).toBe(`XXXXXXXXXXXX${CARD.slice(-4)}`);
    const chosen = await server.request("POST", "/tokens", {
      key: session.session_key,
      body: { id: `${prefix}-chosen`, type: "card_number", data: CARD },
    });
    expect(chosen.status, chosen.text).toBe(201);
    expect(chosen.body).not.toHaveProperty("data");
  });

  it("keeps public Applications to token:create and token:update: refused at update, and never reading", async () => {
    const pub = await application({ name: "pub", type: "public", permissions: ["token:create"] });
    expectProblem(
      await server.request("PUT", `/applications/${pub.id}`, {
        body: { name: "pub", permissions: ["token:create", "token:search"] },
      }),
      400,
      { errors: { "permissions[1]": ["token:search is not allowed for public Applications"] } },
    );
    for (const [method, path, body] of [
      ["GET", `/tokens/${card.id}`, undefined],
      ["GET", "/tokens", undefined],
      ["POST", "/tokens/search", { query: "" }],
      ["POST", "/detokenize", { value: `{{ ${card.id} }}` }],
    ] as const) {
      expectProblem(await server.request(method, path, { key: pub.key, ...(body && { body }) }), 403);
    }
  });
});
