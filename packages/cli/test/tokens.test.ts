import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  send,
  startTestServer,
  type TestServer,
} from "../../server/test/harness.js";
import { freePort } from "../../server/test/postgres-cluster.js";
import { killAll, run, type RunOptions } from "./run-cli.js";

const ALL_TOKEN_PERMISSIONS = ["token:create", "token:read", "token:search", "token:delete"];

describe.skipIf(STORE_UNAVAILABLE)(`tessera tokens (${STORE})`, () => {
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;
  let key: string;

  const cli = (args: string[], options: RunOptions & { env?: Record<string, string> } = {}) =>
    run(args, { ...env, ...options.env }, dir, options);

  const lines = (...requests: (object | string)[]) =>
    requests.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n") + "\n";

  beforeAll(async () => {
    server = await startTestServer();
    dir = mkdtempSync(path.join(tmpdir(), "tessera-cli-"));
    // Cards in clear, everything else masked (and redacted where a type has no mask).
    const app = await server.request("POST", "/applications", {
      body: {
        name: "backend",
        type: "private",
        rules: [
          { priority: 1, container: "/pci/", transform: "reveal", permissions: ALL_TOKEN_PERMISSIONS },
          { priority: 2, container: "/", transform: "mask", permissions: ALL_TOKEN_PERMISSIONS },
        ],
      },
    });
    key = app.body.key;
    env = { TESSERA_URL: server.url, SVC_API_KEY: key };
  });

  afterEach(killAll);

  afterAll(async () => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  });

  it("creates tokens from flags, stdin and a body, then gets, searches and deletes them", async () => {
    const card = {
      type: "card",
      data: { number: "4242424242424242", expiration_month: 12, expiration_year: 2030 },
      metadata: { customerId: "cus_42" },
    };
    writeFileSync(path.join(dir, "card.json"), JSON.stringify(card));
    const [piped, ssn, body, generic] = await Promise.all([
      cli(
        ["tokens", "create", "--type", "card_number", "--data", "-"].concat([
          "--metadata",
          "customer=cus_1",
          "--metadata",
          "note=a=b",
        ]),
        { input: "4111111111111111\n" },
      ),
      cli(["tokens", "create", "--type", "social_security_number", "--data", "123-45-6789", "--json"]),
      cli(["tokens", "create", "--body", "card.json", "--json"]),
      cli([
        "tokens",
        "create",
        "--data-json",
        '{"iban":"DE89370400440532013000"}',
        "--container",
        "/bank/",
        "--search-index",
        "{{ data.iban }}",
        "--expires-at",
        new Date(Date.now() + 86_400_000).toISOString(),
        "--json",
      ]),
    ]);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(/^data +4111111111111111$/m);
    expect(piped.stdout).toMatch(/^containers +\/pci\/high\/$/m);
    expect(piped.stdout).toMatch(/^metadata +customer=cus_1, note=a=b$/m);
    expect(piped.stdout).toMatch(/^mask +\{\{ data \| reveal_last: 4 \}\}$/m);

    const ssnToken = JSON.parse(ssn.stdout);
    expect(ssnToken).toMatchObject({
      type: "social_security_number",
      containers: ["/pii/high/"],
      data: "XXX-XX-6789",
      tenant_id: expect.any(String),
      fingerprint_expression: expect.any(String),
    });
    expect(ssnToken.search_indexes).toHaveLength(3);

    // The caller's keys inside data, metadata and mask are passed and shown exactly as written.
    const cardToken = JSON.parse(body.stdout);
    expect(cardToken.data).toEqual(card.data);
    expect(cardToken.metadata).toEqual({ customerId: "cus_42" });
    expect(Object.keys(cardToken.mask)).toEqual(["number", "expiration_month", "expiration_year"]);

    const genericToken = JSON.parse(generic.stdout);
    expect(genericToken).toMatchObject({
      type: "token",
      containers: ["/bank/"],
      search_indexes: ["{{ data.iban }}"],
    });
    expect(genericToken.expires_at).toEqual(expect.any(String));
    expect(genericToken).not.toHaveProperty("data");

    const cardNumberId = /^id +(\S+)$/m.exec(piped.stdout)![1]!;
    const [get, getJson, search, searchJson, everything, badQuery] = await Promise.all([
      cli(["tokens", "get", cardNumberId]),
      cli(["tokens", "get", cardToken.id, "--json"]),
      cli(["tokens", "search", "metadata.customer:cus_1"]),
      cli(["tokens", "search", "type:social_security_number", "AND", "data:6789", "--json"]),
      cli(["tokens", "search", "--all", "--size", "1", "--json"]),
      cli(["tokens", "search", "foo:bar"]),
    ]);
    expect(get.stdout).toMatch(/^data +4111111111111111$/m);
    expect(JSON.parse(getJson.stdout)).toEqual(cardToken);

    expect(search.code, search.stderr).toBe(0);
    expect(search.stdout).toMatch(/^ID +TYPE +CONTAINERS +DATA +METADATA +CREATED$/m);
    expect(search.stdout).toMatch(
      new RegExp(
        `^${cardNumberId} +card_number +/pci/high/ +4111111111111111 +customer=cus_1, note=a=b +\\S+Z$`,
        "m",
      ),
    );
    expect(search.stdout).toContain("Page 1 of 1, 1 token.");

    const page = JSON.parse(searchJson.stdout);
    expect(page.pagination).toMatchObject({ total_items: 1, page_number: 1 });
    expect(page.data.map((t: { id: string }) => t.id)).toEqual([ssnToken.id]);

    const ids = everything.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line).id);
    expect(ids.sort()).toEqual([cardNumberId, ssnToken.id, cardToken.id, genericToken.id].sort());

    expect(badQuery.code).toBe(4);
    expect(badQuery.stderr).toBe(
      "tessera: the server refused the request (400 Validation failed): The request has invalid fields; " +
        "see errors: query: unknown field 'foo' (at offset 0)\n",
    );

    const [deleted, deletedQuietly] = await Promise.all([
      cli(["tokens", "delete", cardNumberId]),
      cli(["tokens", "delete", ssnToken.id, "--json"]),
    ]);
    expect(deleted.stdout).toBe(`Deleted token ${cardNumberId}.\n`);
    expect(deletedQuietly.code, deletedQuietly.stderr).toBe(0);
    expect(deletedQuietly.stdout).toBe("");
    const gone = await cli(["tokens", "get", cardNumberId]);
    expect(gone.code).toBe(4);
    expect(gone.stderr).toBe(
      `tessera: the server refused the request (404 Not found): Token ${cardNumberId} was not found\n`,
    );
  });

  it("imports a JSON Lines file with a progress bar, and skips and reports each bad line", async () => {
    writeFileSync(
      path.join(dir, "good.jsonl"),
      lines(
        { type: "card_number", data: "5555555555554444", metadata: { batch: "one" } },
        "",
        { type: "social_security_number", data: "987-65-4321", metadata: { batch: "one" } },
        { data: { iban: "GB82WEST12345698765432" }, containers: ["/bank/"], metadata: { batch: "one" } },
      ),
    );
    writeFileSync(
      path.join(dir, "bad.jsonl"),
      lines(
        { type: "card_number", data: "4000056655665556", metadata: { batch: "two" } },
        { type: "card_number", data: "4000056655665557", metadata: { batch: "two" } },
        '{"type":"card_number","data":"4000002500003155",}',
        '["not", "an", "object"]',
        { type: "token", data: "last", metadata: { batch: "two" } },
      ),
    );
    const [good, bad] = await Promise.all([
      cli(["tokens", "import", "good.jsonl", "--json", "--concurrency", "2"]),
      cli(["tokens", "import", "bad.jsonl"]),
    ]);

    expect(good.code, good.stderr).toBe(0);
    const imported = good.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(imported.map((token) => token.type)).toEqual(["card_number", "social_security_number", "token"]);
    // Each line's outcome with its number (line 2 is blank); the token without its data (issue 16).
    expect(imported.map((outcome) => [outcome.line, outcome.status])).toEqual([
      [1, "created"],
      [3, "created"],
      [4, "created"],
    ]);
    expect(imported[0]).toMatchObject({ id: expect.any(String), metadata: { batch: "one" } });
    for (const outcome of imported) expect(outcome).not.toHaveProperty("data");
    expect(good.stdout).not.toContain("5555555555554444");
    expect(good.stderr).toMatch(/^\[\.{30}\] 0\/3 lines$/m);
    expect(good.stderr).toMatch(/^\[#{30}\] 3\/3 lines$/m);
    expect(good.stderr).toMatch(/^Imported 3 of 3 tokens from good\.jsonl\.$/m);

    expect(bad.code).toBe(4);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toMatch(
      /^line 2: the server refused the request \(400 Validation failed\): .*data: /m,
    );
    expect(bad.stderr).toMatch(/^line 3: the line is not valid JSON \(at character \d+\)$/m);
    expect(bad.stderr).toMatch(/^line 4: the line is not a JSON object/m);
    expect(bad.stderr).toMatch(/^\[#{30}\] 5\/5 lines$/m);
    expect(bad.stderr).toMatch(/^Imported 2 of 5 tokens from bad\.jsonl; 3 lines failed: 2, 3, 4\.$/m);
    // A line that does not parse is not quoted back: it holds token data.
    expect(bad.stderr).not.toContain("4000002500003155");
    expect(bad.stderr).not.toMatch(/\n\s+at /);

    const search = async (query: string) =>
      (await send(server.url, key, "POST", "/tokens/search", { body: { query } })).body.pagination
        .total_items;
    expect(await search("metadata.batch:one")).toBe(3);
    expect(await search("metadata.batch:two")).toBe(2);
  });

  it("imports from standard input: with no file, with '-' and from /dev/stdin, reporting every line with --json", async () => {
    const input = lines(
      { type: "card_number", data: "4000000000000077", metadata: { batch: "piped" } },
      "",
      { type: "card_number", data: "4000000000000078", metadata: { batch: "piped" } },
      '{"type":"card_number","data":"4000000000000093",}',
      { type: "social_security_number", data: "111-22-3333", metadata: { batch: "piped" } },
    );
    // A named pipe stands for what a shell's `<(zcat cards.jsonl.gz)` passes: a path that can be read once.
    const fifo = path.join(dir, "cards.fifo");
    execFileSync("mkfifo", [fifo]);
    const [bare, dash, device, pipe] = await Promise.all([
      cli(["tokens", "import", "--json"], { input }),
      cli(["tokens", "import", "-", "--json"], { input }),
      cli(["tokens", "import", "/dev/stdin"], { input }),
      cli(["tokens", "import", "cards.fifo"]),
      writeFile(fifo, input),
    ]);
    for (const result of [bare, dash]) {
      // A line refused makes the exit 4, as from a file.
      expect(result.code, result.stderr).toBe(4);
      const outcomes = result.stdout
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(outcomes.map((outcome) => [outcome.line, outcome.status])).toEqual([
        [1, "created"],
        [3, "failed"],
        [4, "failed"],
        [5, "created"],
      ]);
      expect(outcomes[0]).toMatchObject({ type: "card_number", id: expect.any(String) });
      expect(outcomes[1]).toMatchObject({
        exit_code: 4,
        message: expect.stringMatching(/^the server refused the request \(400 Validation failed\)/),
        problem: {
          status: 400,
          type: "urn:tessera:problem:validation-failed",
          errors: { data: expect.any(Array) },
        },
      });
      expect(outcomes[2]).toEqual({
        line: 4,
        status: "failed",
        exit_code: 4,
        message: expect.stringMatching(/^the line is not valid JSON \(at character \d+\)$/),
      });
      // Neither the data created nor the data refused is printed, on either stream.
      for (const data of ["4000000000000077", "4000000000000078", "4000000000000093", "111-22-3333"]) {
        expect(result.stdout).not.toContain(data);
        expect(result.stderr).not.toContain(data);
      }
      expect(result.stderr).toMatch(/^0 lines$/m);
      expect(result.stderr).toMatch(/^4 lines$/m);
      expect(result.stderr).toMatch(/^Imported 2 of 4 tokens from standard input; 2 lines failed: 3, 4\.$/m);
    }
    expect(device.code, device.stderr).toBe(4);
    expect(device.stdout).toBe("");
    expect(device.stderr).toMatch(/^Imported 2 of 4 tokens from \/dev\/stdin; 2 lines failed: 3, 4\.$/m);
    expect(pipe.code, pipe.stderr).toBe(4);
    expect(pipe.stderr).toMatch(/^Imported 2 of 4 tokens from cards\.fifo; 2 lines failed: 3, 4\.$/m);

    const search = async (query: string) =>
      (await send(server.url, key, "POST", "/tokens/search", { body: { query } })).body.pagination
        .total_items;
    expect(await search("metadata.batch:piped")).toBe(8);
  });

  it("stops an import when the server cannot be reached (exit 3), and refuses a file it cannot read (exit 2)", async () => {
    writeFileSync(path.join(dir, "three.jsonl"), lines({ data: "a" }, { data: "b" }, { data: "c" }));
    const closedPort = await freePort();
    const [stopped, missing] = await Promise.all([
      cli(["tokens", "import", "three.jsonl"], { env: { TESSERA_URL: `http://127.0.0.1:${closedPort}` } }),
      cli(["tokens", "import", "nowhere.jsonl"]),
    ]);
    expect(stopped.code).toBe(3);
    expect(stopped.stderr).toContain("Imported 0 of 3 tokens from three.jsonl.\n");
    expect(stopped.stderr).toContain(
      "The import stopped at line 1: import that line and the ones after it again.\n",
    );
    expect(stopped.stderr).toMatch(
      new RegExp(`tessera: cannot reach http://127\\.0\\.0\\.1:${closedPort} \\(ECONNREFUSED\\): .*\\n$`),
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      "tessera: cannot read nowhere.jsonl (ENOENT) (run 'tessera tokens import --help' for usage)\n",
    );
  });
});
