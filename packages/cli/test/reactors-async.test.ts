import { verifyWebhook } from "@tessera/sdk";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { STORE, STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type WebhookReceiver,
} from "../../server/test/webhook-receiver.js";
import { killAll, run, type Finished } from "./run-cli.js";

const CARD = "4242424242424242";
const HOUR = 3_600_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";

/** Echoes the card it was given; throws BadRequestError when asked to fail. */
const ECHO = `const { BadRequestError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");

module.exports = async ({ args }) => {
  if (args.fail) throw new BadRequestError({ card: [args.fail] });
  return { raw: { card: args.card } };
};
`;

const SECRET_WARNING =
  "This is a secret: anyone who has it can forge webhooks your receivers will accept. Keep it out of logs, " +
  "tickets and chat.\n";

function expectOneLineError(result: Finished, code: number): void {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe("");
  expect(result.stderr).toMatch(/^tessera: [^\n]+\n$/);
}

function field(stdout: string, name: string): string | undefined {
  return new RegExp(`^${name} +(.+)$`, "m").exec(stdout)?.[1];
}

/** Each CLI process costs about a second of CPU; a busy machine needs more than vitest's 30 s per test. */
const PROCESS_HEAVY = { timeout: 120_000 };

describe.skipIf(STORE_UNAVAILABLE)(
  `tessera reactors invoke --callback-url, webhooks (${STORE})`,
  PROCESS_HEAVY,
  () => {
    let server: TestServer | undefined;
    let receiver: WebhookReceiver | undefined;
    let env: Record<string, string>;
    /** A private key that may create, read and use every token: the one that invokes. */
    let callerKey: string;
    /** Another private Application with token:use: not the one that invoked. */
    let otherKey: string;
    let card: string;
    let reactor: string;
    const cwd = process.cwd();

    const cli = (args: string[], key?: string) =>
      run(args, { ...env, ...(key !== undefined && { SVC_API_KEY: key }) }, cwd);
    const asCaller = (args: string[]) => cli(args, callerKey);

    /** Invokes over HTTP (no CLI process) and answers the accepted invocation's id. */
    async function invokedInBackground(args: unknown, callbackUrl: string): Promise<string> {
      const response = await server!.request("POST", `/reactors/${reactor}/react`, {
        key: callerKey,
        body: { args, callback_url: callbackUrl },
      });
      expect(response.status, response.text).toBe(202);
      return response.body.id as string;
    }

    /** The invocation as the API shows it, once `done` holds for it. */
    async function invocationWhen(id: string, done: (body: any) => boolean): Promise<any> {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const response = await server!.request("GET", `/reactors/${reactor}/invocations/${id}`, {
          key: callerKey,
        });
        expect(response.status, response.text).toBe(200);
        if (done(response.body)) return response.body;
        if (Date.now() > deadline) throw new Error(`the invocation did not get there: ${response.text}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    /** The webhook of one invocation, among all the receiver got. */
    async function webhookOf(id: string): Promise<ReceivedWebhook> {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const hook = receiver!.received.find((received) => received.headers["webhook-id"] === `msg_${id}`);
        if (hook !== undefined) return hook;
        if (Date.now() > deadline) throw new Error(`no webhook for ${id}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    beforeAll(async () => {
      receiver = await startWebhookReceiver();
      server = await startTestServer({ TESSERA_WEBHOOK_ALLOW_PRIVATE: "true", TESSERA_JOB_POLL_MS: "50" });
      env = { TESSERA_URL: server.url, SVC_API_KEY: server.bootstrapKey };
      const created = async (path: string, body: unknown, key?: string) => {
        const response = await server!.request("POST", path, { body, ...(key !== undefined && { key }) });
        expect(response.status, response.text).toBe(201);
        return response.body as { id: string; key: string };
      };
      const use = ["token:create", "token:read", "token:use"];
      callerKey = (
        await created("/applications", {
          name: "caller",
          type: "private",
          rules: [{ priority: 1, container: "/", transform: "reveal", permissions: use }],
        })
      ).key;
      otherKey = (
        await created("/applications", {
          name: "other",
          type: "private",
          rules: [{ priority: 1, container: "/", transform: "reveal", permissions: use }],
        })
      ).key;
      card = (await created("/tokens", { type: "card_number", data: CARD }, callerKey)).id;
      reactor = (await created("/reactors", { name: "echo", code: ECHO, configuration: {} })).id;
    });

    afterEach(killAll);

    // The server stops its reactor workers (Deno processes) as it closes.
    afterAll(async () => {
      killAll();
      await server?.close();
      await receiver?.close();
    });

    it("invokes in the background, shows the delivered invocation, and its webhook verifies with the printed secret", async () => {
      const hook = `${receiver!.url}/hook`;
      const [secret, secretJson, accepted, acceptedJson] = await Promise.all([
        cli(["webhooks", "secret"]),
        cli(["webhooks", "secret", "--json"]),
        asCaller([
          "reactors",
          "invoke",
          reactor,
          "--args",
          `{"card": "{{ ${card} }}"}`,
          "--callback-url",
          hook,
        ]),
        asCaller(
          ["reactors", "invoke", reactor].concat([
            "--callback-url",
            `${hook}?n=2`,
            "--timeout-ms",
            "20000",
            "--json",
          ]),
        ),
      ]);

      expect(secret.code, secret.stderr).toBe(0);
      expect(secret.stdout).toMatch(
        new RegExp(`^secret +whsec_[A-Za-z0-9+/]+=*\nversion +1\ncreated_at +${TIME}\n$`),
      );
      expect(secret.stderr).toBe(SECRET_WARNING);
      const printed = field(secret.stdout, "secret")!;
      expect(secretJson.code, secretJson.stderr).toBe(0);
      expect(JSON.parse(secretJson.stdout)).toEqual((await server!.request("GET", "/webhooks/secret")).body);
      expect(JSON.parse(secretJson.stdout).secret).toBe(printed);

      expect(accepted.code, accepted.stderr).toBe(0);
      const id = field(accepted.stdout, "id")!;
      expect(id).toMatch(UUID);
      expect(accepted.stdout).toBe(`id      ${id}\nstatus  pending\n`);
      expect(accepted.stderr).toBe(`Follow it with: tessera reactors invocation ${reactor} ${id}\n`);
      expect(acceptedJson.code, acceptedJson.stderr).toBe(0);
      expect(acceptedJson.stderr).toBe("");
      const second = JSON.parse(acceptedJson.stdout);
      expect(second).toEqual({ id: expect.stringMatching(UUID), status: "pending" });

      // The receiver checks each webhook with the secret the CLI printed, as a real one would.
      const [webhook, secondWebhook] = await Promise.all([webhookOf(id), webhookOf(second.id)]);
      expect(webhook.path).toBe("/hook");
      expect(await verifyWebhook(webhook.raw, webhook.headers, printed)).toMatchObject({
        type: "reactor.invocation.completed",
        data: { id, reactor_id: reactor, status: "completed", result: { raw: { card: CARD } } },
      });
      expect(secondWebhook.path).toBe("/hook?n=2");
      expect(await verifyWebhook(secondWebhook.raw, secondWebhook.headers, printed)).toMatchObject({
        data: { id: second.id, result: { raw: {} } },
      });

      const [shown, shownJson] = await Promise.all([
        asCaller(["reactors", "invocation", reactor, id, "--wait", "30"]),
        asCaller(["reactors", "invocation", reactor, second.id, "--wait", "30", "--json"]),
      ]);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stderr).toBe("");
      const [details, result, attempts] = shown.stdout.split("\n\n");
      expect(details).toMatch(
        new RegExp(
          [
            `^id +${id}`,
            `reactor_id +${reactor}`,
            "status +completed",
            "run_attempts +1",
            `callback_url +${hook}`,
            "timeout_ms +10000",
            `created_at +${TIME}`,
            `started_at +${TIME}`,
            `finished_at +${TIME}`,
            `delivery +delivered at ${TIME} \\(attempt 1\\)$`,
          ].join("\n"),
        ),
      );
      expect(result).toBe(
        ["result", "  {", '    "raw": {', `      "card": "${CARD}"`, "    }", "  }"].join("\n"),
      );
      expect(attempts).toMatch(
        new RegExp(`^ATTEMPT +AT +DURATION +RESPONSE +ERROR\n1 +${TIME} +\\d+ ms +200\n$`),
      );

      expect(shownJson.code, shownJson.stderr).toBe(0);
      const api = await server!.request("GET", `/reactors/${reactor}/invocations/${second.id}`, {
        key: callerKey,
      });
      expect(JSON.parse(shownJson.stdout)).toEqual(api.body);
      expect(api.body).toMatchObject({
        status: "completed",
        timeout_ms: 20_000,
        result: { raw: {} },
        delivery: { status: "delivered", attempts: [{ attempt: 1, response_status: 200 }] },
      });
    });

    it("rotates the secret: prints the new one, and webhooks verify under the new and the previous secret", async () => {
      const previous = (await server!.request("GET", "/webhooks/secret")).body.secret as string;
      const rotated = await cli(["webhooks", "rotate-secret"]);
      expect(rotated.code, rotated.stderr).toBe(0);
      const secret = field(rotated.stdout, "secret")!;
      expect(secret).toMatch(/^whsec_/);
      expect(secret).not.toBe(previous);
      expect(rotated.stdout).toMatch(
        new RegExp(`^secret +whsec_\\S+\nversion +2\ncreated_at +${TIME}\nprevious_valid_until +${TIME}\n$`),
      );
      const until = field(rotated.stdout, "previous_valid_until")!;
      expect(rotated.stderr).toBe(
        `${SECRET_WARNING}The previous secret also signs until ${until}: give your receivers the new one before then.\n`,
      );

      const [current, accepted] = await Promise.all([
        cli(["webhooks", "secret", "--json"]),
        asCaller(["reactors", "invoke", reactor, "--callback-url", `${receiver!.url}/rotated`, "--json"]),
      ]);
      expect(current.code, current.stderr).toBe(0);
      expect(JSON.parse(current.stdout)).toEqual({
        secret,
        version: 2,
        created_at: field(rotated.stdout, "created_at"),
        previous_valid_until: until,
      });
      const webhook = await webhookOf(JSON.parse(accepted.stdout).id);
      for (const key of [secret, previous]) await verifyWebhook(webhook.raw, webhook.headers, key);
    });

    it("refuses what the server refuses, with exit 4: a bad callback URL, another Application's invocation, a missing permission", async () => {
      const id = await invokedInBackground({}, `${receiver!.url}/hook`);
      const unknown = "0190f0a0-0000-7000-8000-000000000000";
      const before = (await server!.request("GET", "/webhooks/secret")).body;
      const [badUrl, notFound, others, management, noRead, noRotate] = await Promise.all([
        asCaller(["reactors", "invoke", reactor, "--callback-url", "ftp://example.com/hook"]),
        asCaller(["reactors", "invoke", unknown, "--callback-url", `${receiver!.url}/hook`]),
        cli(["reactors", "invocation", reactor, id], otherKey),
        cli(["reactors", "invocation", reactor, id]),
        asCaller(["webhooks", "secret"]),
        asCaller(["webhooks", "rotate-secret", "--json"]),
      ]);
      expectOneLineError(badUrl, 4);
      expect(badUrl.stderr).toBe(
        "tessera: the server refused the request (400 Validation failed): The request has invalid fields; see errors: " +
          "callback_url: must be an http or https URL\n",
      );
      expectOneLineError(notFound, 4);
      expect(notFound.stderr).toBe(
        `tessera: the server refused the request (404 Not found): Reactor ${unknown} was not found\n`,
      );
      // Only the Application that invoked may see what came of it.
      expectOneLineError(others, 4);
      expect(others.stderr).toContain("(404 Not found)");
      expectOneLineError(management, 4);
      expect(management.stderr).toContain("(403 Forbidden)");
      expectOneLineError(noRead, 4);
      expect(noRead.stderr).toContain("(403 Forbidden): The Application lacks the permission webhook:read");
      expectOneLineError(noRotate, 4);
      expect(noRotate.stderr).toContain(
        "(403 Forbidden): The Application lacks the permission webhook:update",
      );
      expect((await server!.request("GET", "/webhooks/secret")).body).toEqual(before);
    });

    it("rejects a wrong command line with exit 2 before sending anything", async () => {
      const cases: [string[], string][] = [
        [
          ["reactors", "invoke", "r", "--callback-url", "https://a.example/", "--timeout-ms", "9999"],
          "--timeout-ms must be an integer from 10000 to 210000",
        ],
        [["reactors", "invocation", "r"], "missing <reactor id> <invocation id>"],
        [["reactors", "invocation", "r", "i", "--wait", "0"], "--wait must be an integer from 1 to 86400"],
        [["webhooks"], "'tessera webhooks' needs a command: secret, rotate-secret"],
      ];
      // An unreachable server: anything sent would fail with exit 3, not 2.
      const results = await Promise.all(
        cases.map(([args]) => run(args, { ...env, TESSERA_URL: "http://127.0.0.1:9" }, cwd)),
      );
      results.forEach((result, i) => {
        expectOneLineError(result, 2);
        expect(result.stderr).toContain(cases[i]![1]);
      });
    });

    // Last: it moves the server's clock a day ahead, past what verifyWebhook accepts as a message's timestamp.
    it("follows a delivery that fails: the attempts, --wait exits 3 while it is retried and 1 once it is given up", async () => {
      const gone = await startWebhookReceiver();
      await gone.close();
      receiver!.respondWith([], 503);
      try {
        const [failing, unreachable] = await Promise.all([
          invokedInBackground({ fail: "expired" }, `${receiver!.url}/hook`),
          invokedInBackground({}, `${gone.url}/nobody`),
        ]);
        await Promise.all(
          [failing, unreachable].map((id) =>
            invocationWhen(id, (body) => body.delivery?.attempts.length === 1),
          ),
        );

        const [shown, waited, refused] = await Promise.all([
          asCaller(["reactors", "invocation", reactor, failing]),
          asCaller(["reactors", "invocation", reactor, failing, "--wait", "1"]),
          asCaller(["reactors", "invocation", reactor, unreachable]),
        ]);
        expect(shown.code, shown.stderr).toBe(0);
        expect(field(shown.stdout, "status")).toBe("failed");
        expect(field(shown.stdout, "error")).toBe("400 Reactor error: Bad Request: card: expired");
        const delivery = field(shown.stdout, "delivery")!;
        expect(delivery).toMatch(new RegExp(`^pending after 1 attempt, next attempt at ${TIME}$`));
        expect(shown.stdout).not.toContain("result");
        expect(shown.stdout).toMatch(
          new RegExp(`\n\nATTEMPT +AT +DURATION +RESPONSE +ERROR\n1 +${TIME} +\\d+ ms +503\n$`),
        );

        // Still pending: the invocation as it stands on stdout, why the wait ended on stderr.
        expect(waited.code, waited.stderr).toBe(3);
        expect(waited.stdout).toBe(shown.stdout);
        expect(waited.stderr).toBe(
          `tessera: the webhook was not delivered within 1 s (delivery ${delivery}; last attempt: answered 503): ` +
            "run the command again to keep waiting\n",
        );

        expect(refused.code, refused.stderr).toBe(0);
        expect(field(refused.stdout, "status")).toBe("completed");
        expect(refused.stdout).toMatch(new RegExp(`\n1 +${TIME} +\\d+ ms +ECONNREFUSED`));

        // Past the 24-hour retry window: one more attempt, then the server gives up.
        server!.clock.advance(25 * HOUR);
        const gaveUp = await asCaller(["reactors", "invocation", reactor, failing, "--wait", "30", "--json"]);
        expect(gaveUp.code, gaveUp.stderr).toBe(1);
        expect(gaveUp.stderr).toBe(
          "tessera: the webhook was not delivered: the server gave up after 2 attempts; last attempt: answered 503\n",
        );
        const final = JSON.parse(gaveUp.stdout);
        expect(final).toMatchObject({
          status: "failed",
          error: { status: 400, title: "Reactor error", errors: { card: ["expired"] } },
          delivery: { status: "failed" },
        });
        expect(final.delivery.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([
          503, 503,
        ]);
      } finally {
        receiver!.respondWith([], 200);
      }
    });
  },
);
