import { BasisTheory, BasisTheoryClient } from "@basis-theory/node-sdk";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../test/fixtures/bt-reactors");
const CARD = { number: "4242424242424242", expiration_month: 4, expiration_year: 2031 };

/**
 * Basis Theory's own Node SDK (5.7.0, pinned) creating a reactor from the BT corpus and invoking it with BT's
 * detokenization expressions in `args`, as a BT client would against api.basistheory.com.
 */
describe.skipIf(STORE_UNAVAILABLE)("a reactor driven through @basis-theory/node-sdk", () => {
  let server: TestServer;
  let management: BasisTheoryClient;
  let backend: BasisTheoryClient;

  /** `apiKey` and `baseUrl`, as a BT client configures it; no retries, so a refusal is seen once. */
  const client = (key: string) => new BasisTheoryClient({ apiKey: key, baseUrl: server.url, maxRetries: 0 });

  beforeAll(async () => {
    server = await startTestServer({ TESSERA_REACTOR_TIMEOUT_MS: "20000" });
    management = client(server.bootstrapKey);
    const created = await management.applications.create({
      name: "backend",
      type: "private",
      rules: [
        {
          priority: 1,
          container: "/",
          transform: "reveal",
          permissions: ["token:use", "token:create", "token:read"],
        },
      ],
    });
    backend = client(created.key!);
  });
  afterAll(() => server?.close());

  it("creates a BT reactor and reacts with {{ token: … | json }} and {{ … | filter }} arguments", async () => {
    const card = await backend.tokens.create({ type: "card", data: CARD });
    const reactor = await management.reactors.create({
      name: "card insights",
      code: readFileSync(path.join(FIXTURES, "03-card-insights.js"), "utf8"),
      configuration: {},
    });
    const answer = await backend.reactors.react(reactor.id!, {
      args: { card: `{{ token: ${card.id} | json: '$.data' }}` },
    });
    expect(answer.raw).toEqual({
      brand: "visa",
      bin: "424242",
      last4: "4242",
      valid: true,
      expires: "04/2031",
    });

    const signer = await management.reactors.create({
      name: "signer",
      code: readFileSync(path.join(FIXTURES, "04-hmac-signature.js"), "utf8"),
      configuration: { SIGNING_SECRET: "s3cret" },
    });
    const signed = await backend.reactors.react(signer.id!, {
      args: { card_number: `{{ ${card.id} | json: '$.number' }}`, amount: 100, timestamp: 1 },
    });
    expect((signed.raw as { headers: Record<string, string> }).headers["X-Signature"]).toMatch(
      /^[0-9a-f]{64}$/,
    );

    const detokenized = await backend.tokens.detokenize({
      last4: `{{ ${card.id} | json: '$.number' | last4 }}`,
      month: `{{ token: ${card.id} | json: '$.data.expiration_month' }}`,
    });
    expect(detokenized).toEqual({ last4: "4242", month: 4 });
  });

  it("raises the SDK's typed errors for a refused expression and for a reactor's BadRequestError", async () => {
    const card = await backend.tokens.create({ type: "card", data: CARD });
    const validator = await management.reactors.create({
      name: "validator",
      code: readFileSync(path.join(FIXTURES, "13-validation-errors.js"), "utf8"),
      configuration: {},
    });
    const bad = backend.reactors.react(validator.id!, { args: { card: `{{ ${card.id} }}`, amount: 0 } });
    await expect(bad).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
    await expect(bad).rejects.toMatchObject({
      statusCode: 400,
      body: { errors: { amount: ["must be a positive integer in cents"] } },
    });
    const unknownFilter = backend.reactors.react(validator.id!, {
      args: { card: `{{ ${card.id} | nosuch }}` },
    });
    await expect(unknownFilter).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
    await expect(unknownFilter).rejects.toMatchObject({
      body: { errors: { body: [`{{ ${card.id} | nosuch }} has invalid filters: unknown filter 'nosuch'`] } },
    });
  });
});
