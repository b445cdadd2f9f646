import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { STORE, STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { killAll, run, type Finished, type RunOptions } from "./run-cli.js";

const CARD = "4242424242424242";
/** A configuration value that stands for a secret: no table may show it unless asked. */
const SECRET = "sk_test_not_for_tables";

/** Echoes its arguments and a configuration value, tokenizes `keep`, and throws BadRequestError when asked. */
const ECHO = `const { BadRequestError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");

module.exports = async ({ args, configuration }) => {
  if (args.fail) throw new BadRequestError({ card: ["is expired", args.fail] });
  return {
    raw: { card: args.card, note: args.note, region: configuration.REGION },
    ...(args.keep && { tokenize: { kept: { type: "token", data: args.keep } } }),
  };
};
`;

/** Answers with responses of its own choosing (wire-format §7), a redirect among them. */
const CUSTOM = `const { CustomHttpResponseError } = require("@tessera/reactor");

module.exports = async ({ args }) => {
  const headers = args.to === undefined ? {} : { Location: args.to };
  const body = args.status === 200 ? ["own", "body"] : { brewing: true };
  throw new CustomHttpResponseError({ status: args.status, headers, body });
};
`;

/** Every failure is one line on stderr, nothing on stdout, and never a stack trace. */
function expectOneLineError(result: Finished, code: number): void {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe("");
  expect(result.stderr).toMatch(/^tessera: [^\n]+\n$/);
}

function field(stdout: string, name: string): string | undefined {
  return new RegExp(`^${name} +(.+)$`, "m").exec(stdout)?.[1];
}

/** Each test starts a dozen CLI processes of about a second of CPU each; a busy machine needs more than 30 s. */
const PROCESS_HEAVY = { timeout: 120_000 };

describe.skipIf(STORE_UNAVAILABLE)(`tessera reactors (${STORE})`, PROCESS_HEAVY, () => {
  let server: TestServer | undefined;
  let dir: string | undefined;
  let env: Record<string, string>;
  /** The Application reactors run as (svc). */
  let identity: { id: string };
  /** A private key that may create, read and use every token: the one that invokes. */
  let callerKey: string;

  const cli = (args: string[], options: RunOptions & { env?: Record<string, string> } = {}) =>
    run(args, { ...env, ...options.env }, dir!, options);
  const asCaller = (args: string[], options: RunOptions = {}) =>
    cli(args, { ...options, env: { SVC_API_KEY: callerKey } });
  const write = (name: string, text: string) => writeFileSync(path.join(dir!, name), text);

  async function deployed(name: string, code: string, file = `${name}.js`): Promise<string> {
    write(file, code);
    const result = await cli(["reactors", "deploy", file, "--name", name, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout).id as string;
  }

  beforeAll(async () => {
    server = await startTestServer();
    dir = mkdtempSync(path.join(tmpdir(), "tessera-cli-"));
    env = { TESSERA_URL: server.url, SVC_API_KEY: server.bootstrapKey };
    const app = async (body: unknown) => {
      const response = await server!.request("POST", "/applications", { body });
      expect(response.status, response.text).toBe(201);
      return response.body as { id: string; key: string };
    };
    identity = await app({ name: "reactor identity", type: "private", permissions: ["token:create"] });
    callerKey = (
      await app({
        name: "caller",
        type: "private",
        rules: [
          {
            priority: 1,
            container: "/",
            transform: "reveal",
            permissions: ["token:create", "token:read", "token:use"],
          },
        ],
      })
    ).key;
  });

  afterEach(killAll);

  // The server stops its reactor workers (Deno processes) as it closes.
  afterAll(async () => {
    killAll();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  it("deploys from a file and stdin, lists, gets and deletes, as tables without configuration values and as JSON", async () => {
    write("echo.js", ECHO);
    write("echo.config.json", JSON.stringify({ API_KEY: SECRET, REGION: "us" }));
    const [table, json] = await Promise.all([
      cli(
        ["reactors", "deploy", "echo.js", "--name", "echo", "--config-file", "echo.config.json"].concat([
          "--config",
          "REGION=eu",
          "--config",
          "URL=https://a.example/?x=1",
          "--application",
          identity.id,
        ]),
      ),
      cli(["reactors", "deploy", "-", "--name", "from stdin", "--json"], { input: ECHO }),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stderr).toBe("");
    const echoId = field(table.stdout, "id")!;
    expect(field(table.stdout, "name")).toBe("echo");
    expect(field(table.stdout, "code")).toBe(`9 lines, ${ECHO.length} characters`);
    // --config wins over the file's REGION; the file's order comes first.
    expect(field(table.stdout, "configuration")).toBe(
      "API_KEY, REGION, URL (values hidden; --show-config shows them)",
    );
    expect(field(table.stdout, "application_id")).toBe(`${identity.id} (reactor identity, private)`);
    expect(table.stdout).not.toContain(SECRET);

    expect(json.code, json.stderr).toBe(0);
    const fromStdin = JSON.parse(json.stdout);
    expect(fromStdin).toEqual({
      id: expect.any(String),
      tenant_id: expect.any(String),
      name: "from stdin",
      code: ECHO,
      configuration: {},
      created_by: expect.any(String),
      created_at: expect.any(String),
    });

    const [list, listShown, listJson, all, byName, get, getShown, getJson] = await Promise.all([
      cli(["reactors", "list"]),
      cli(["reactors", "list", "--show-config"]),
      cli(["reactors", "list", "--json", "--size", "1"]),
      cli(["reactors", "list", "--all", "--size", "1", "--json"]),
      cli(["reactors", "list", "--name", "ECH*", "--json"]),
      cli(["reactors", "get", echoId]),
      cli(["reactors", "get", echoId, "--show-config"]),
      cli(["reactors", "get", echoId, "--json"]),
    ]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ID +NAME +CONFIGURATION +APPLICATION +CREATED$/m);
    expect(list.stdout).toMatch(
      new RegExp(`^${echoId} +echo +API_KEY, REGION, URL +${identity.id} +\\S+Z$`, "m"),
    );
    expect(list.stdout).toMatch(new RegExp(`^${fromStdin.id} +from stdin +\\S+Z$`, "m"));
    expect(list.stdout).toContain("Page 1 of 1, 2 reactors.");
    expect(list.stdout).not.toContain(SECRET);
    // The column is cut at 48 characters; the whole value is in get --show-config and --json.
    expect(listShown.stdout).toContain(`API_KEY=${SECRET}, REGION=eu, URL=…`);

    const page = JSON.parse(listJson.stdout);
    expect(page.pagination).toEqual({ total_items: 2, page_number: 1, page_size: 1, total_pages: 2 });
    // The test server's clock stands still, so the two share created_at and the ids decide the order.
    const order = [echoId, fromStdin.id].sort();
    expect(page.data.map((r: { id: string }) => r.id)).toEqual(order.slice(0, 1));
    const ids = all.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line).id as string);
    expect(ids).toEqual(order);
    expect(JSON.parse(byName.stdout).data).toEqual([
      expect.objectContaining({
        id: echoId,
        name: "echo",
        configuration: { API_KEY: SECRET, REGION: "eu", URL: "https://a.example/?x=1" },
      }),
    ]);

    expect(get.code, get.stderr).toBe(0);
    expect(field(get.stdout, "configuration")).toBe(
      "API_KEY, REGION, URL (values hidden; --show-config shows them)",
    );
    expect(field(get.stdout, "application_id")).toBe(identity.id);
    expect(get.stdout).not.toContain(SECRET);
    expect(field(getShown.stdout, "configuration")).toBe(
      `API_KEY=${SECRET}, REGION=eu, URL=https://a.example/?x=1`,
    );
    const stored = await server!.request("GET", `/reactors/${echoId}`);
    expect(JSON.parse(getJson.stdout)).toEqual(stored.body);
    expect(stored.body.configuration).toEqual({
      API_KEY: SECRET,
      REGION: "eu",
      URL: "https://a.example/?x=1",
    });

    const [deleted, deletedQuietly] = await Promise.all([
      cli(["reactors", "delete", echoId]),
      cli(["reactors", "delete", fromStdin.id, "--json"]),
    ]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe(`Deleted reactor ${echoId}.\n`);
    expect(deletedQuietly.code, deletedQuietly.stderr).toBe(0);
    expect(deletedQuietly.stdout).toBe("");
    expect((await server!.request("GET", `/reactors/${fromStdin.id}`)).status).toBe(404);

    const [gone, again] = await Promise.all([
      cli(["reactors", "get", echoId]),
      cli(["reactors", "delete", echoId]),
    ]);
    for (const result of [gone, again]) {
      expectOneLineError(result, 4);
      expect(result.stderr).toBe(
        `tessera: the server refused the request (404 Not found): Reactor ${echoId} was not found\n`,
      );
    }
  });

  it("replaces a reactor with --id (PUT), keeping the name, configuration and Application not given", async () => {
    write("v1.js", "module.exports = async () => ({ raw: 1 });\n");
    const created = await cli(
      ["reactors", "deploy", "v1.js", "--name", "versioned", "--config", `API_KEY=${SECRET}`].concat([
        "--application",
        identity.id,
        "--json",
      ]),
    );
    const { id } = JSON.parse(created.stdout);
    write("v2.js", "module.exports = async () => ({ raw: 2 });\n");

    const kept = await cli(["reactors", "deploy", "v2.js", "--id", id]);
    expect(kept.code, kept.stderr).toBe(0);
    expect(field(kept.stdout, "id")).toBe(id);
    expect(field(kept.stdout, "modified_at")).toMatch(/Z$/);
    let stored = (await server!.request("GET", `/reactors/${id}`)).body;
    expect(stored).toMatchObject({
      name: "versioned",
      code: "module.exports = async () => ({ raw: 2 });\n",
      configuration: { API_KEY: SECRET },
      application_id: identity.id,
    });

    const replaced = await cli([
      "reactors",
      "deploy",
      "v1.js",
      "--id",
      id,
      "--name",
      "renamed",
      "--config",
      "REGION=eu",
      "--json",
    ]);
    expect(replaced.code, replaced.stderr).toBe(0);
    stored = (await server!.request("GET", `/reactors/${id}`)).body;
    expect(JSON.parse(replaced.stdout)).toEqual(stored);
    expect(stored).toMatchObject({
      name: "renamed",
      configuration: { REGION: "eu" },
      application_id: identity.id,
    });

    const unknown = "0190f0a0-0000-7000-8000-000000000000";
    const missing = await cli(["reactors", "deploy", "v1.js", "--id", unknown]);
    expectOneLineError(missing, 4);
    expect(missing.stderr).toBe(
      `tessera: the server refused the request (404 Not found): Reactor ${unknown} was not found\n`,
    );
  });

  it("reports code the server refuses at its file, line and column (exit 4)", async () => {
    write("syntax.js", "module.exports = async () => {\n  return ;;\n  )\n};\n");
    write("modules.js", 'const fs = require("fs");\nconst cp = require("child_process");\n');
    write("blank.js", "\n");
    const [syntax, modules, blank, piped] = await Promise.all([
      cli(["reactors", "deploy", "syntax.js", "--name", "broken"]),
      cli(["reactors", "deploy", "modules.js", "--name", "   ", "--json"]),
      cli(["reactors", "deploy", "blank.js", "--name", "blank"]),
      // A byte-order mark is not sent: the column is the editor's.
      cli(["reactors", "deploy", "-", "--name", "piped"], { input: "\uFEFFlet x = ;" }),
    ]);
    expectOneLineError(syntax, 4);
    expect(syntax.stderr).toBe(
      "tessera: the server refused the request (400 Validation failed): syntax.js:3:3: Unexpected token ')'\n",
    );
    expectOneLineError(modules, 4);
    expect(modules.stderr).toBe(
      "tessera: the server refused the request (400 Validation failed): " +
        "modules.js:1:12: 'fs' is not an allowed module; modules.js:2:12: 'child_process' is not an allowed module; " +
        "name: must not be blank\n",
    );
    expectOneLineError(blank, 4);
    expect(blank.stderr).toBe(
      "tessera: the server refused the request (400 Validation failed): blank.js: must not be blank\n",
    );
    expectOneLineError(piped, 4);
    expect(piped.stderr).toBe(
      "tessera: the server refused the request (400 Validation failed): <stdin>:1:9: Unexpected token ';'\n",
    );
    const names = (await server!.request("GET", "/reactors?name=broken")).body.pagination.total_items;
    expect(names).toBe(0);
  });

  it("invokes with detokenized arguments and prints raw and tokens, or the API's JSON", async () => {
    const card = await server!.request("POST", "/tokens", {
      key: callerKey,
      body: { type: "card_number", data: CARD },
    });
    expect(card.status, card.text).toBe(201);
    const id = await deployed("echo to invoke", ECHO);
    write("args.json", JSON.stringify({ card: `{{ ${card.body.id} }}`, keep: "kept value" }));

    const [table, json, fromFile, bare] = await Promise.all([
      asCaller(
        ["reactors", "invoke", id, "--args"].concat([
          JSON.stringify({ card: `{{ ${card.body.id} }}`, note: `card ending {{ ${card.body.id} }}` }),
        ]),
      ),
      asCaller(["reactors", "invoke", id, "--args", `{"card": "{{ ${card.body.id} }}"}`, "--json"]),
      asCaller(["reactors", "invoke", id, "--args-file", "args.json"]),
      asCaller(["reactors", "invoke", id, "--json"]),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stderr).toBe("");
    expect(table.stdout).toBe(
      ["raw", "  {", `    "card": "${CARD}",`, `    "note": "card ending ${CARD}"`, "  }", ""].join("\n"),
    );
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ raw: { card: CARD } });

    expect(fromFile.code, fromFile.stderr).toBe(0);
    const [raw, tokens] = fromFile.stdout.split("\n\n");
    expect(raw).toBe(["raw", "  {", `    "card": "${CARD}"`, "  }"].join("\n"));
    expect(tokens).toMatch(/^tokens\n {2}\{\n {4}"kept": \{\n/);
    const kept = JSON.parse(tokens!.slice("tokens\n".length));
    expect(kept.kept).toMatchObject({ type: "token", data: "kept value", id: expect.any(String) });

    expect(bare.code, bare.stderr).toBe(0);
    expect(JSON.parse(bare.stdout)).toEqual({ raw: {} });
  });

  it("exits as the server answers a reactor's errors, never follows its redirects, and escapes what it wrote", async () => {
    let visits = 0;
    const elsewhere: Server = createServer((_request, response) => {
      visits++;
      response.end("{}");
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
    try {
      const port = (elsewhere.address() as { port: number }).port;
      const [echo, custom] = await Promise.all([deployed("thrower", ECHO), deployed("custom", CUSTOM)]);
      const unknown = "0190f0a0-0000-7000-8000-000000000000";
      const [bad, escaped, teapot, ownBody, redirect, notFound, noPermission, loopback] = await Promise.all([
        asCaller(["reactors", "invoke", echo, "--args", '{"fail": "card declined"}']),
        asCaller(["reactors", "invoke", echo, "--args", '{"fail": "\\u001b[2J\\u009b2J"}']),
        asCaller(["reactors", "invoke", custom, "--args", '{"status": 418}']),
        asCaller(["reactors", "invoke", custom, "--args", '{"status": 200}']),
        asCaller([
          "reactors",
          "invoke",
          custom,
          "--args",
          JSON.stringify({ status: 307, to: `http://127.0.0.1:${port}/` }),
        ]),
        asCaller(["reactors", "invoke", unknown]),
        cli(["reactors", "invoke", echo]),
        // This server runs without TESSERA_WEBHOOK_ALLOW_PRIVATE: it refuses webhooks to its own network.
        asCaller(["reactors", "invoke", echo, "--callback-url", `http://127.0.0.1:${port}/hook`]),
      ]);
      expectOneLineError(bad, 4);
      expect(bad.stderr).toBe(
        "tessera: the server refused the request (400 Reactor error): Bad Request: card: is expired, card declined\n",
      );
      expectOneLineError(escaped, 4);
      expect(escaped.stderr).toBe(
        "tessera: the server refused the request (400 Reactor error): Bad Request: card: is expired, " +
          "\\u001b[2J\\u009b2J\n",
      );
      expectOneLineError(teapot, 4);
      expect(teapot.stderr).toBe(
        'tessera: the reactor answered 418 with its own response: {"brewing":true}\n',
      );
      expect(ownBody.code, ownBody.stderr).toBe(0);
      expect(ownBody.stdout).toBe(
        'The reactor answered with a response of its own:\n  [\n    "own",\n    "body"\n  ]\n',
      );
      // Followed, the redirect would have carried the caller's key to the reactor's chosen address; the server
      // refuses to pass it on, and the CLI would not follow it either (connection.ts).
      expectOneLineError(redirect, 1);
      expect(redirect.stderr).toBe(
        "tessera: the server failed (500 Reactor error): The reactor's custom response was refused: " +
          "status: must be a final status from 200 to 599 and not a redirect (3xx); got 307; " +
          "headers.Location: is not a header a reactor may set\n",
      );
      expect(visits).toBe(0);
      expectOneLineError(notFound, 4);
      expect(notFound.stderr).toBe(
        `tessera: the server refused the request (404 Not found): Reactor ${unknown} was not found\n`,
      );
      expectOneLineError(noPermission, 4);
      expect(noPermission.stderr).toContain(
        "(403 Forbidden): The Application lacks the permission token:use",
      );
      expectOneLineError(loopback, 4);
      expect(loopback.stderr).toBe(
        "tessera: the server refused the request (400 Validation failed): The request has invalid fields; see " +
          "errors: callback_url: must not point to a private, loopback or link-local address\n",
      );
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });

  it("rejects a wrong command line with exit 2 before sending anything, never echoing a configuration value", async () => {
    write("ok.js", "module.exports = async () => ({});\n");
    write("list.json", "[]");
    const cases: [string[], string][] = [
      [["reactors", "deploy", "ok.js"], "missing --name (needed unless --id names a reactor to replace)"],
      [["reactors", "deploy", "--name", "x"], "missing <file.js>"],
      [["reactors", "deploy", "nowhere.js", "--name", "x"], "cannot read nowhere.js (ENOENT)"],
      [
        ["reactors", "deploy", "ok.js", "--name", "x", "--config", "REGION=eu", "--config", SECRET],
        "--config number 2 is not NAME=VALUE",
      ],
      [["reactors", "deploy", "ok.js", "--name", "x", "--config", `=${SECRET}`], "--config number 1 is not"],
      [
        ["reactors", "deploy", "ok.js", "--name", "x", "--config-file", "list.json"],
        "--config-file must hold a JSON object",
      ],
      [["reactors", "list", "--all", "--page", "2"], "--all reads every page: leave out --page"],
      [["reactors", "get"], "missing <id> (run 'tessera reactors get --help' for usage)"],
      [
        ["reactors", "invoke", "x", "--args", "{}", "--args-file", "a.json"],
        "--args and --args-file both give the arguments: pass one or the other",
      ],
      [["reactors", "invoke", "x", "--args", `{"card": "${CARD}",}`], "--args is not valid JSON"],
      [["reactors", "invoke", "x", "--timeout", "0"], "--timeout must be an integer from 1 to 3600"],
      [
        ["reactors", "invoke", "x", "--timeout-ms", "20000"],
        "--timeout-ms applies only with --callback-url (to wait longer for a synchronous answer, use --timeout)",
      ],
      [
        ["reactors", "run"],
        "unknown command 'reactors run': use one of deploy, list, get, delete, invoke, invocation",
      ],
    ];
    // An unreachable server: anything sent would fail with exit 3, not 2.
    const results = await Promise.all(
      cases.map(([args]) => cli(args, { env: { TESSERA_URL: "http://127.0.0.1:9" } })),
    );
    results.forEach((result, i) => {
      expectOneLineError(result, 2);
      expect(result.stderr).toContain(cases[i]![1]);
      expect(result.stderr).not.toContain(SECRET);
      expect(result.stderr).not.toContain(CARD);
    });
  });
});

describe("tessera reactors --help", PROCESS_HEAVY, () => {
  const cwd = process.cwd();

  it("lists the group's commands, at the top and in the group, and shows each command's options", async () => {
    const names = ["deploy", "list", "get", "delete", "invoke", "invocation"];
    const [top, group, ...commands] = await Promise.all([
      run(["--help"], {}, cwd),
      run(["reactors", "--help"], {}, cwd),
      ...names.map((name) => run(["reactors", name, "--help"], {}, cwd)),
    ]);
    for (const result of [top, group, ...commands]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe("");
    }
    for (const name of ["secret", "rotate-secret"]) {
      expect(top.stdout).toMatch(new RegExp(`^  webhooks ${name} +\\S`, "m"));
    }
    for (const name of names) {
      expect(top.stdout).toMatch(new RegExp(`^  reactors ${name} +\\S`, "m"));
      expect(group.stdout).toMatch(new RegExp(`^  ${name} +\\S`, "m"));
    }
    expect(group.stdout).toContain("Usage: tessera reactors <command> [options]");
    const [deploy, list, get, , invoke, invocation] = commands;
    expect(deploy!.stdout).toMatch(/^Usage: tessera reactors deploy <file\.js> --name <name>/);
    for (const flag of [
      "--config <NAME=VALUE>",
      "--config-file <file.json>",
      "--application <id>",
      "--id <id>",
    ]) {
      expect(deploy!.stdout).toContain(flag);
    }
    for (const help of [deploy, list, get]) expect(help!.stdout).toMatch(/^ {6}--show-config /m);
    expect(invoke!.stdout).toMatch(/^ {6}--args-file <file\.json> /m);
    expect(invoke!.stdout).toMatch(/^ {6}--json /m);
    expect(invoke!.stdout).toMatch(/^ {6}--callback-url <url> /m);
    expect(invoke!.stdout).toMatch(/^ {6}--timeout-ms <ms> /m);
    expect(invocation!.stdout).toMatch(/^Usage: tessera reactors invocation <reactor id> <invocation id>/);
    expect(invocation!.stdout).toMatch(/^ {6}--wait <seconds> /m);
  });
});
