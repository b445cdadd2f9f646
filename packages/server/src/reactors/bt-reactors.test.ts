import {
  createDecipheriv,
  createHash,
  createHmac,
  generateKeyPairSync,
  privateDecrypt,
  randomBytes,
  constants,
} from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestResponse,
  type TestServer,
} from "../../test/harness.js";

/**
 * Reactor code written as Basis Theory documents it (Node 16 CommonJS, `req.bt`, the formulas SDK's errors,
 * `require` of Node built-ins and npm packages), each file of test/fixtures/bt-reactors saved unchanged and
 * invoked through the API in the real sandbox, with BT's detokenization expressions in its arguments.
 */
const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../test/fixtures/bt-reactors");
const CARD = "4242424242424242";
const CARD_DATA = { number: CARD, expiration_month: 4, expiration_year: 2031, cvc: "123" };
const SSN = "123-45-6789";

interface Ids {
  card: string;
  cardNumber: string;
  ssn: string;
  name: string;
}

interface Example {
  readonly file: string;
  readonly configuration?: Record<string, string>;
  /** Whether the reactor has the reactor Application (its `bt`); true unless said otherwise. */
  readonly application?: boolean;
  readonly args: (ids: Ids) => unknown;
  readonly check: (response: TestResponse, ids: Ids) => void | Promise<void>;
}

const SIGNING_SECRET = randomBytes(16).toString("hex");
const SHARED_KEY = randomBytes(32);
const PARTNER = generateKeyPairSync("rsa", { modulusLength: 2048 });

/** A loopback server standing for a card processor: reactors may not reach it, and it counts what does. */
let processor: { server: http.Server; url: string; hits: number };

const ok = (response: TestResponse) => {
  expect(response.status, response.text).toBe(200);
  return response.body.raw;
};

const EXAMPLES: Example[] = [
  {
    file: "01-raw-response.js",
    configuration: { REGION: "eu-west" },
    args: ({ name }) => ({ name: `{{ ${name} }}` }),
    check: (r) =>
      expect(ok(r)).toEqual({ greeting: "Hello from eu-west", name_length: "Ada Lovelace".length }),
  },
  {
    file: "02-tokenize-output.js",
    args: ({ ssn }) => ({ ssn: `{{ ${ssn} }}`, customer_id: "cus_42" }),
    check: (r) => {
      expect(ok(r)).toEqual({ customer_id: "cus_42", ssn_last4: "6789" });
      expect(r.body.tokens.ssn).toMatchObject({ type: "social_security_number", containers: ["/pii/high/"] });
      expect(r.body.tokens.normalized).toEqual(expect.any(String));
      expect(JSON.stringify(r.body.tokens)).not.toContain("123456789");
    },
  },
  {
    file: "03-card-insights.js",
    args: ({ card }) => ({ card: `{{ token: ${card} | json: '$.data' }}` }),
    check: (r) =>
      expect(ok(r)).toEqual({ brand: "visa", bin: "424242", last4: "4242", valid: true, expires: "04/2031" }),
  },
  {
    file: "04-hmac-signature.js",
    configuration: { SIGNING_SECRET },
    args: ({ cardNumber }) => ({ card_number: `{{ ${cardNumber} }}`, amount: 1299, timestamp: 1767225600 }),
    check: (r) => {
      const body = JSON.stringify({ card_number: CARD, amount: 1299, currency: "USD" });
      expect(ok(r)).toEqual({
        headers: {
          "X-Timestamp": "1767225600",
          "X-Signature": createHmac("sha256", SIGNING_SECRET).update(`1767225600.${body}`).digest("hex"),
        },
        body_sha256: createHash("sha256").update(body).digest("hex"),
      });
    },
  },
  {
    file: "05-buffer-basic-auth.js",
    configuration: { MERCHANT_ID: "merchant_1", MERCHANT_PASSWORD: "pässword" },
    args: ({ card }) => ({ card_number: `{{ token: ${card} | json: '$.data.number' }}` }),
    check: (r) =>
      expect(ok(r)).toEqual({
        scheme: "Basic",
        length: Buffer.from("merchant_1:pässword").toString("base64").length,
        round_trips: true,
        card_bytes: 16,
        hex_prefix: "3432",
      }),
  },
  {
    file: "06-querystring-form.js",
    args: ({ card }) => ({ card: `{{ ${card} }}`, amount: 500 }),
    check: (r) => {
      expect(ok(r)).toEqual({
        fields: ["amount", "currency", "card[number]", "card[exp_month]", "card[exp_year]"],
        amount: 500,
        escaped: true,
      });
      expect(r.body.tokens.form_body).toEqual(expect.any(String));
    },
  },
  {
    file: "07-process-module.js",
    args: () => ({ message: "hi" }),
    check: (r) =>
      expect(ok(r)).toEqual({
        environment: "production",
        env_keys: 0,
        order: ["sync", "tick"],
        same_process: true,
        elapsed_ok: true,
        platform: "string",
        echo: "hi",
      }),
  },
  {
    file: "08-stream-transform.js",
    args: ({ cardNumber }) => ({
      rows: [
        { id: "a", number: `{{ ${cardNumber} }}` },
        { id: "b", number: "5555555555554444" },
      ],
    }),
    check: (r) => expect(ok(r)).toEqual({ masked: ["a,************4242", "b,************4444"] }),
  },
  {
    file: "09-bt-retrieve.js",
    args: ({ card }) => ({ token_id: card }),
    check: (r, { card }) =>
      // The reactor's Application masks /pci/: what `bt` reads is what that Application may see.
      expect(ok(r)).toEqual({
        id: card,
        type: "card",
        data: { number: "XXXXXXXXXXXX4242", expiration_month: 4, expiration_year: 2031 },
        containers: ["/pci/high/"],
        created_at_is_text: true,
        has_fingerprint_expression: true,
      }),
  },
  {
    file: "10-bt-token-lifecycle.js",
    args: () => ({ nickname: "rainy-day" }),
    check: (r) =>
      expect(ok(r)).toEqual({
        created_type: "token",
        search_indexes: ["{{ data.nickname }}"],
        metadata: { source: "reactor", step: "updated" },
        data: { nickname: "rainy-day" },
        modified: true,
        after_delete: 404,
      }),
  },
  {
    file: "11-bt-tokenize-detokenize.js",
    args: () => ({ account_number: "000123456789", bank: "First Example", note: "wire for invoice 7" }),
    check: (r) =>
      expect(ok(r)).toEqual({
        account_type: "us_bank_account_number",
        account_data: "000123456789",
        note_is_id: true,
        back: { note: "wire for invoice 7", last4: "6789", bank: "First Example" },
      }),
  },
  {
    file: "12-bt-search-list.js",
    args: () => ({ order: "ord_777" }),
    check: (r) =>
      expect(ok(r)).toEqual({
        search_total: 2,
        search_data: ["first", "second"],
        list_total: 2,
        list_page_size: 10,
        list_ids_match: true,
      }),
  },
  {
    file: "13-validation-errors.js",
    args: ({ card }) => ({ card: `{{ ${card} }}`, amount: -5 }),
    check: (r) => {
      expectProblem(r, 400, {
        code: "reactor-error",
        errors: { amount: ["must be a positive integer in cents"], card: undefined },
      });
      expect(r.body.detail).toBe("Bad Request");
    },
  },
  {
    file: "14-custom-http-response.js",
    args: ({ cardNumber }) => ({ card_number: `{{ ${cardNumber} }}`, amount: 2500 }),
    check: (r) => {
      expect(r.status, r.text).toBe(201);
      expect(r.headers.get("x-charge-id")).toBe("ch_2500");
      expect(r.body).toEqual({ charged: 2500, last4: "4242" });
    },
  },
  {
    file: "15-https-processor.js",
    configuration: { API_KEY: "sk_test_1" },
    args: ({ card }) => ({ card: `{{ ${card} }}`, amount: 100 }),
    check: (r) => {
      expectProblem(r, 503, { code: "reactor-error" });
      expect(r.body.detail).toBe("Service Unavailable");
      expect(r.body.errors.error[0]).toMatch(
        /^processor unreachable: .*Requires net access to "127\.0\.0\.1:\d+"/,
      );
      expect(processor.hits).toBe(0);
    },
  },
  {
    file: "16-axios-processor.js",
    configuration: { API_KEY: "sk_test_1" },
    args: ({ card }) => ({ card: `{{ ${card} }}`, amount: 100 }),
    check: (r) => {
      expectProblem(r, 503, { code: "reactor-error" });
      expect(r.body.errors.processor[0]).toMatch(/Requires net access to "127\.0\.0\.1:\d+"/);
      expect(r.body.errors.idempotency_key[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(processor.hits).toBe(0);
    },
  },
  {
    file: "17-rsa-encrypt.js",
    configuration: {
      PARTNER_PUBLIC_KEY: PARTNER.publicKey.export({ type: "spki", format: "pem" }).toString(),
    },
    args: ({ cardNumber }) => ({ card_number: `{{ ${cardNumber} }}` }),
    check: (r) => {
      const encrypted = Buffer.from(ok(r).encrypted_card as string, "base64");
      const plain = privateDecrypt(
        { key: PARTNER.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256" },
        encrypted,
      );
      expect(plain.toString("utf8")).toBe(CARD);
    },
  },
  {
    file: "18-aes-gcm-encrypt.js",
    configuration: { SHARED_KEY_HEX: SHARED_KEY.toString("hex") },
    args: ({ card }) => ({ card: `{{ ${card} }}` }),
    check: (r) => {
      const { iv, tag, ciphertext } = ok(r) as Record<string, string>;
      const decipher = createDecipheriv("aes-256-gcm", SHARED_KEY, Buffer.from(iv!, "base64"));
      decipher.setAuthTag(Buffer.from(tag!, "base64"));
      const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext!, "base64")), decipher.final()]);
      expect(JSON.parse(plain.toString("utf8"))).toEqual(CARD_DATA);
    },
  },
  {
    file: "19-bt-required.js",
    application: false,
    args: ({ card }) => ({ token_id: card }),
    check: (r) => {
      expectProblem(r, 400, {
        code: "reactor-error",
        errors: { application: ["this reactor needs an Application"] },
      });
      expect(r.body.detail).toBe("Invalid Reactor Configuration");
    },
  },
  {
    file: "20-bt-api-errors.js",
    args: () => ({ missing_id: "no-such-token" }),
    check: (r) =>
      expect(ok(r)).toEqual({
        missing: { name: "BasisTheoryApiError", status: 404, title: "Not found" },
        invalid: { status: 400, errors: { data: ["fails the Luhn check"] } },
        detokenize: { status: 400 },
      }),
  },
  {
    file: "21-fetch-idempotency.js",
    args: ({ card }) => ({ card: `{{ ${card} }}`, amount: 100, order_id: "ord_1" }),
    check: (r) => {
      expectProblem(r, 503, { code: "reactor-error" });
      expect(r.body.errors).toEqual({
        processor: ["FetchError"],
        idempotency_key: [createHash("sha256").update("ord_1:100").digest("hex")],
      });
      expect(processor.hits).toBe(0);
    },
  },
];

describe.skipIf(STORE_UNAVAILABLE)("Basis Theory reactor code, unchanged", () => {
  let server: TestServer;
  let caller: string;
  let reactorApp: string;
  const ids: Ids = { card: "", cardNumber: "", ssn: "", name: "" };

  async function application(body: unknown): Promise<{ id: string; key: string }> {
    const response = await server.request("POST", "/applications", { body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function token(body: unknown, key = caller): Promise<string> {
    const response = await server.request("POST", "/tokens", { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body.id as string;
  }

  beforeAll(async () => {
    processor = { server: http.createServer(), url: "", hits: 0 };
    processor.server.on("request", (_req, res) => {
      processor.hits++;
      res.end('{"id":"ch_1"}');
    });
    await new Promise<void>((resolve) => processor.server.listen(0, "127.0.0.1", resolve));
    processor.url = `127.0.0.1:${(processor.server.address() as AddressInfo).port}`;
    server = await startTestServer({ TESSERA_REACTOR_TIMEOUT_MS: "20000" });
    caller = (
      await application({
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
      })
    ).key;
    const reactorApplication = await application({
      name: "reactor application",
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "mask", permissions: ["token:read", "token:create"] },
        {
          priority: 2,
          container: "/",
          transform: "reveal",
          permissions: ["token:read", "token:create", "token:update", "token:delete", "token:search"],
        },
      ],
    });
    reactorApp = reactorApplication.id;
    ids.card = await token({ type: "card", data: CARD_DATA });
    ids.cardNumber = await token({ type: "card_number", data: CARD });
    ids.ssn = await token({ type: "social_security_number", data: SSN });
    ids.name = await token({ data: "Ada Lovelace" });
    await token({ data: "first", metadata: { order: "ord_777" } });
    await token({ data: "second", metadata: { order: "ord_777" } });
    await token({ data: "other", metadata: { order: "ord_778" } });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await new Promise((resolve) => processor?.server.close(resolve));
  });

  it("has an example for every file of the corpus, and at least 15", () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".js"));
    expect(files.sort()).toEqual(EXAMPLES.map((e) => e.file).sort());
    expect(files.length).toBeGreaterThanOrEqual(15);
  });

  it("gives bt no key, only functions, acting as the reactor's Application whatever options the code passes", async () => {
    const code = `module.exports = async function (req) {
      const { args, bt } = req;
      const names = [];
      const walk = (object, at) => {
        for (const name of Object.getOwnPropertyNames(object)) {
          const value = object[name];
          names.push(at + name + ":" + typeof value);
          if (typeof value === "object" && value !== null) walk(value, at + name + ".");
        }
      };
      walk(bt, "");
      // basis-theory-js takes request options last; an apiKey there must not change who the call acts as.
      const token = await bt.tokens.retrieve(args.token_id, { apiKey: args.caller_key });
      return { raw: { names: names.sort(), json: JSON.stringify(bt), frozen: Object.isFrozen(bt.tokens), data: token.data } };
    };`;
    const saved = await server.request("POST", "/reactors", {
      body: { name: "bt inspector", code, configuration: {}, application: { id: reactorApp } },
    });
    expect(saved.status, saved.text).toBe(201);
    const response = await server.request("POST", `/reactors/${saved.body.id}/react`, {
      key: caller,
      body: { args: { token_id: ids.cardNumber, caller_key: caller } },
    });
    expect(ok(response)).toEqual({
      names: [
        "detokenize:function",
        "tokenize:function",
        "tokens.create:function",
        "tokens.delete:function",
        "tokens.list:function",
        "tokens.retrieve:function",
        "tokens.search:function",
        "tokens.update:function",
        "tokens:object",
      ],
      json: '{"tokens":{}}',
      frozen: true,
      // The reactor's Application masks /pci/; the caller, whose key was passed, would have seen the number.
      data: "XXXXXXXXXXXX4242",
    });
  });

  it.each(EXAMPLES.map((example) => [example.file, example] as const))(
    "%s is saved unchanged and runs",
    async (file, example) => {
      const code = readFileSync(path.join(FIXTURES, file), "utf8");
      const configuration = {
        ...example.configuration,
        PROCESSOR_URL: file.startsWith("15-") ? `https://${processor.url}` : `http://${processor.url}`,
      };
      const saved = await server.request("POST", "/reactors", {
        body: {
          name: file,
          code,
          configuration,
          ...(example.application !== false && { application: { id: reactorApp } }),
        },
      });
      expect(saved.status, saved.text).toBe(201);
      expect(saved.body.code).toBe(code);
      const response = await server.request("POST", `/reactors/${saved.body.id}/react`, {
        key: caller,
        body: { args: example.args(ids) },
      });
      await example.check(response, ids);
    },
    60_000,
  );
});
