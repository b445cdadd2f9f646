// Tessera driven by Basis Theory's own Node SDK (issue 18 item 7), unmodified and configured as its users
// configure it for Basis Theory: `apiKey` and `baseUrl`, nothing else. The SDK sends the key as BT-API-KEY,
// serializes camelCase to the wire's snake_case, walks cursor pages with its own iterator and raises its own typed
// errors; each test checks one of those against a real server on the store under test. docs/compatibility.md
// lists what this covers.
import { BasisTheory, BasisTheoryClient, BasisTheoryError } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../packages/server/test/harness.js";

describe.skipIf(STORE_UNAVAILABLE)("@basis-theory/node-sdk 5.7.0 against Tessera", () => {
  let server: TestServer;
  /** The bootstrap management key. */
  let management: BasisTheoryClient;
  /** A private Application that reveals /pci/ and /general/, searches and uses tokens everywhere. */
  let backend: BasisTheoryClient;
  let backendApplicationId: string;

  const client = (apiKey: string) => new BasisTheoryClient({ apiKey, baseUrl: server.url });

  /** The error a call raised, for assertions on its class and body. */
  async function failure(call: () => Promise<unknown>): Promise<unknown> {
    try {
      await call();
    } catch (error) {
      return error;
    }
    throw new Error("the call succeeded");
  }

  beforeAll(async () => {
    // The SDK falls back to this variable when no apiKey is given; it must play no part here.
    delete process.env["BT-API-KEY"];
    server = await startTestServer();
    management = client(server.bootstrapKey);
    const created = await management.applications.create({
      name: "backend",
      type: "private",
      rules: [
        {
          priority: 1,
          container: "/",
          transform: "reveal",
          permissions: [
            "token:create",
            "token:read",
            "token:update",
            "token:delete",
            "token:search",
            "token:use",
          ],
        },
      ],
    });
    backendApplicationId = created.id!;
    backend = client(created.key!);
  });
  afterAll(() => server?.close());

  describe("applications", () => {
    it("creates, gets, gets by key, lists page by page, updates and deletes", async () => {
      const created = await management.applications.create({
        name: "sdk app",
        type: "private",
        permissions: ["token:read"],
      });
      expect(created).toMatchObject({ name: "sdk app", type: "private", permissions: ["token:read"] });
      expect(created.key).toMatch(/^key_/);
      expect(created.createdAt).toBeInstanceOf(Date);

      const fetched = await management.applications.get(created.id!);
      expect(fetched).toMatchObject({ id: created.id, tenantId: created.tenantId, name: "sdk app" });
      expect(fetched.key).toBeUndefined();

      const self = await failure(() => client(created.key!).applications.getByKey());
      // A private key holds no application:read (spec §4.2, DESIGN §6). Basis Theory's getByKey needs no
      // permission, so its SDK has no typed error for a 403 there: the plain BasisTheoryError with the status.
      expect(self).toBeInstanceOf(BasisTheoryError);
      expect((self as BasisTheoryError).statusCode).toBe(403);
      const own = await management.applications.getByKey();
      expect(own.type).toBe("management");

      // The SDK's offset pager asks for pages until one comes back empty.
      const listed: string[] = [];
      for await (const application of await management.applications.list({ size: 1 }))
        listed.push(application.id!);
      expect(listed).toEqual(expect.arrayContaining([created.id, own.id, backendApplicationId]));
      expect(new Set(listed).size).toBe(listed.length);

      const updated = await management.applications.update(created.id!, {
        name: "renamed",
        permissions: ["token:read", "token:search"],
      });
      expect(updated).toMatchObject({ name: "renamed", permissions: ["token:read", "token:search"] });
      expect(updated.modifiedAt).toBeInstanceOf(Date);

      await management.applications.delete(created.id!);
      expect(await failure(() => management.applications.get(created.id!))).toBeInstanceOf(
        BasisTheory.NotFoundError,
      );
    });
  });

  describe("permissions", () => {
    it("lists the catalog, for one application type too", async () => {
      const all = await backend.permissions.list();
      expect(all.find((permission) => permission.type === "token:use")).toMatchObject({
        applicationTypes: ["private"],
        description: expect.any(String),
      });
      const publicOnly = await management.permissions.list({ applicationType: "public" });
      expect(publicOnly.map((permission) => permission.type)).toEqual(["token:create", "token:update"]);
    });
  });

  describe("tokens", () => {
    it("creates, gets, merge-patches and deletes, in camelCase on the SDK's side", async () => {
      const token = await backend.tokens.create({
        type: "card_number",
        data: "4242424242424242",
        containers: ["/pci/high/"],
        metadata: { customer: "c-1" },
        mask: "{{ data | reveal_last: 4 }}",
      });
      expect(token).toMatchObject({
        type: "card_number",
        data: "4242424242424242",
        containers: ["/pci/high/"],
        metadata: { customer: "c-1" },
      });
      expect(token.createdAt).toBeInstanceOf(Date);
      expect(token.fingerprint).toEqual(expect.any(String));

      const read = await backend.tokens.get(token.id!);
      expect(read).toMatchObject({ id: token.id, data: "4242424242424242", tenantId: token.tenantId });

      const updated = await backend.tokens.update(token.id!, { metadata: { tier: "gold" } });
      // RFC 7386 on metadata: the new key is added, the old one kept.
      expect(updated.metadata).toEqual({ customer: "c-1", tier: "gold" });
      expect(updated.modifiedAt).toBeInstanceOf(Date);

      await backend.tokens.delete(token.id!);
      expect(await failure(() => backend.tokens.get(token.id!))).toBeInstanceOf(BasisTheory.NotFoundError);
    });

    it("takes null for expires_at, as the default (never)", async () => {
      // The SDK's types say string; its users' JavaScript passes null, and the SDK sends it as it is.
      const token = await backend.tokens.create({
        type: "token",
        data: "no expiry",
        expiresAt: null as unknown as string,
      });
      expect(token.expiresAt).toBeUndefined();
    });

    it("tokenizes a shape and detokenizes plain id expressions", async () => {
      const tokenized = (await backend.tokens.tokenize({
        card: { type: "card_number", data: "5555555555554444" },
        note: "plain text",
        list: ["a", { type: "token", data: { nested: true } }],
      })) as { card: { id: string; type: string }; note: string; list: [string, { id: string }] };
      expect(tokenized.card.type).toBe("card_number");
      expect(typeof tokenized.note).toBe("string");

      const detokenized = await backend.tokens.detokenize({
        card: `{{ ${tokenized.card.id} }}`,
        note: `note: {{ ${tokenized.note} }}`,
        first: `{{ ${tokenized.list[0]} }}`,
        nested: `{{ ${tokenized.list[1].id} }}`,
      });
      expect(detokenized).toEqual({
        card: "5555555555554444",
        note: "note: plain text",
        first: "a",
        // A whole-string expression keeps the value's JSON type.
        nested: { nested: true },
      });
    });

    it("walks listV2 to the end with the SDK's page iterator, filters included", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const token = await backend.tokens.create({
          type: "token",
          data: `listed-${i}`,
          containers: ["/sdk/list/"],
          metadata: { parity: i % 2 === 0 ? "even" : "odd" },
        });
        ids.push(token.id!);
      }
      const walked: string[] = [];
      const pager = await backend.tokens.listV2({ container: "/sdk/list/", size: 2 });
      for await (const token of pager) walked.push(token.id!);
      // Newest first, each once, however many pages it took.
      expect(walked).toHaveLength(7);
      expect(new Set(walked)).toEqual(new Set(ids));

      const even: string[] = [];
      for await (const token of await backend.tokens.listV2({
        container: "/sdk/list/",
        metadata: { parity: "even" },
        size: 3,
      })) {
        even.push(token.id!);
      }
      expect(new Set(even)).toEqual(new Set(ids.filter((_, i) => i % 2 === 0)));

      const page = await backend.tokens.listV2({ container: "/sdk/list/", size: 3 });
      expect(page.data).toHaveLength(3);
      expect(page.hasNextPage()).toBe(true);
    });

    it("walks searchV2 to the end with the SDK's page iterator, in v1's order", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const token = await backend.tokens.create({
          type: "social_security_number",
          data: `456-78-${String(9000 + i)}`,
          containers: ["/sdk/search/"],
        });
        ids.push(token.id!);
      }
      const walked: string[] = [];
      for await (const token of await backend.tokens.searchV2({
        query: 'container:"/sdk/search/*" AND type:social_security_number',
        size: 2,
      })) {
        walked.push(token.id!);
        expect(token.data).toMatch(/^456-78-9\d{3}$/);
      }
      expect(new Set(walked)).toEqual(new Set(ids));
      expect(walked).toHaveLength(5);

      const one = await backend.tokens.searchV2({ query: 'data:"456-78-9003"' });
      expect(one.data.map((token) => token.id)).toEqual([ids[3]]);
      expect(one.hasNextPage()).toBe(false);
    });
  });

  describe("errors, as the SDK's typed errors", () => {
    it("400: BadRequestError with the field errors of a validation problem", async () => {
      const error = await failure(() => backend.tokens.searchV2({ query: "nofield:1" }));
      expect(error).toBeInstanceOf(BasisTheory.BadRequestError);
      const body = (error as BasisTheory.BadRequestError).body as BasisTheory.ValidationProblemDetails;
      expect(body.status).toBe(400);
      expect(body.errors?.query?.[0]).toMatch(/unknown field 'nofield'/);
      expect((error as BasisTheory.BadRequestError).statusCode).toBe(400);
    });

    it("401: UnauthorizedError for an unknown key", async () => {
      const error = await failure(() => client("key_prv_unknown").tokens.get("x"));
      expect(error).toBeInstanceOf(BasisTheory.UnauthorizedError);
      expect(((error as BasisTheory.UnauthorizedError).body as BasisTheory.ProblemDetails).detail).toMatch(
        /not valid/,
      );
    });

    it("403: ForbiddenError for a permission the key lacks", async () => {
      const error = await failure(() => backend.applications.list());
      expect(error).toBeInstanceOf(BasisTheory.ForbiddenError);
      expect(((error as BasisTheory.ForbiddenError).body as BasisTheory.ProblemDetails).detail).toContain(
        "application:read",
      );
    });

    it("404: NotFoundError; 409: ConflictError for a duplicate token id", async () => {
      expect(await failure(() => backend.tokens.get("no-such-token"))).toBeInstanceOf(
        BasisTheory.NotFoundError,
      );
      await backend.tokens.create({ id: "sdk-duplicate", type: "token", data: "x" });
      const error = await failure(() =>
        backend.tokens.create({ id: "sdk-duplicate", type: "token", data: "y" }),
      );
      expect(error).toBeInstanceOf(BasisTheory.ConflictError);
      expect(((error as BasisTheory.ConflictError).body as BasisTheory.ProblemDetails).status).toBe(409);
    });
  });

  // Reactors with detokenized arguments are the other half of issue 18 (items 3 and 5), on another branch.
  describe("reactors with plain arguments", () => {
    it("creates a reactor with its Application and invokes it with react", async () => {
      const reactor = await management.reactors.create({
        name: "echo",
        code: "module.exports = async (req) => ({ raw: { echoed: req.args.value, region: req.configuration.region } });",
        configuration: { region: "eu" },
        application: { id: backendApplicationId },
      });
      expect(reactor).toMatchObject({ name: "echo", configuration: { region: "eu" } });
      expect(reactor.application?.id).toBe(backendApplicationId);

      const result = await backend.reactors.react(reactor.id!, { args: { value: 42 } });
      expect(result.raw).toEqual({ echoed: 42, region: "eu" });

      const listed: string[] = [];
      for await (const item of await management.reactors.list({ size: 1 })) listed.push(item.id!);
      expect(listed).toContain(reactor.id);

      const error = await failure(() => management.reactors.update(reactor.id!, { name: "echo", code: "x" }));
      // A full replacement without configuration would erase it: the spec requires it (item 4).
      expect(error).toBeInstanceOf(BasisTheory.BadRequestError);
      expect(
        ((error as BasisTheory.BadRequestError).body as BasisTheory.ValidationProblemDetails).errors
          ?.configuration,
      ).toBeDefined();
      await management.reactors.delete(reactor.id!);
    });
  });
});
