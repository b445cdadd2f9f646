import { mkdtempSync, rmSync } from "node:fs";
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
import { LINKED_BIN, killAll, run, type Finished, type RunOptions } from "./run-cli.js";

/** Every failure is one line on stderr, nothing on stdout, and never a stack trace. */
function expectOneLineError(result: Finished, code: number): void {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe("");
  expect(result.stderr).toMatch(/^tessera: [^\n]+\n$/);
}

describe.skipIf(STORE_UNAVAILABLE)(`tessera applications and tenants (${STORE})`, () => {
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;

  const cli = (args: string[], options: RunOptions & { env?: Record<string, string> } = {}) =>
    run(args, { ...env, ...options.env }, dir, options);

  beforeAll(async () => {
    server = await startTestServer();
    dir = mkdtempSync(path.join(tmpdir(), "tessera-cli-"));
    env = { TESSERA_URL: server.url, SVC_API_KEY: server.bootstrapKey };
  });

  afterEach(killAll);

  afterAll(async () => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  });

  it("creates Applications from flags and from a body, then lists and shows them, as tables and as JSON", async () => {
    const body = {
      name: "from a body",
      type: "private",
      permissions: ["token:use"],
      rules: [
        {
          description: "PCI, masked",
          priority: 1,
          container: "/pci/",
          transform: "mask",
          permissions: ["token:read", "token:search"],
        },
      ],
    };
    const [table, json] = await Promise.all([
      cli([
        "applications",
        "create",
        "--name",
        "backend",
        "--type",
        "private",
        "--permission",
        "token:use",
        "--rule",
        "/pci/=reveal:token:create,token:read",
        "--rule",
        "/=mask:token:search",
      ]),
      cli(["applications", "create", "--body", "-", "--json"], { input: JSON.stringify(body) }),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^name +backend$/m);
    expect(table.stdout).toMatch(/^permissions +token:use$/m);
    expect(table.stdout).toMatch(/^key +key_prv_\S+$/m);
    expect(table.stdout).toMatch(/^PRIORITY +CONTAINER +TRANSFORM +PERMISSIONS +DESCRIPTION$/m);
    expect(table.stdout).toMatch(/^1 +\/pci\/ +reveal +token:create,token:read$/m);
    expect(table.stdout).toMatch(/^2 +\/ +mask +token:search$/m);
    expect(table.stderr).toBe("The key is shown only now: store it somewhere safe.\n");
    expect(json.code, json.stderr).toBe(0);
    const created = JSON.parse(json.stdout);
    expect(created).toMatchObject({ ...body, tenant_id: expect.any(String), created_at: expect.any(String) });
    expect(created.key).toMatch(/^key_prv_/);
    expect((await send(server.url, created.key, "GET", "/tokens")).status).toBe(200);

    const backendId = /^id +(\S+)$/m.exec(table.stdout)?.[1];
    const [list, listJson, all, get, getJson] = await Promise.all([
      cli(["applications", "list"]),
      cli(["applications", "list", "--json", "--size", "2"]),
      cli(["applications", "list", "--all", "--size", "1", "--json"]),
      cli(["applications", "get", backendId!]),
      cli(["applications", "get", created.id, "--json"]),
    ]);
    const page = JSON.parse(listJson.stdout);
    const total = page.pagination.total_items as number;
    expect(total).toBeGreaterThanOrEqual(3);
    expect(page.pagination).toEqual({
      total_items: total,
      page_number: 1,
      page_size: 2,
      total_pages: Math.ceil(total / 2),
    });
    expect(page.data).toHaveLength(2);
    expect(Object.keys(page.data[0])).toEqual(
      expect.arrayContaining(["id", "tenant_id", "created_at", "rules"]),
    );

    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ID +NAME +TYPE +PERMISSIONS +RULES +CREATED$/m);
    expect(list.stdout).toMatch(new RegExp(`^${backendId} +backend +private +token:use +2 +\\S+Z$`, "m"));
    expect(list.stdout).toContain(`Page 1 of 1, ${total} Applications.`);
    expect(list.stdout).not.toContain("key_");

    const lines = all.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(total);
    expect(lines.map((line) => JSON.parse(line).name)).toEqual(
      expect.arrayContaining(["default administrator", "backend", "from a body"]),
    );

    expect(get.stdout).toMatch(/^name +backend$/m);
    expect(get.stdout).toMatch(/^2 +\/ +mask +token:search$/m);
    expect(get.stdout).not.toMatch(/^key /m);
    const { key: _key, ...withoutKey } = created;
    expect(JSON.parse(getJson.stdout)).toEqual(withoutKey);
  });

  it("updates what it is given and keeps the rest, regenerates the key and deletes", async () => {
    const created = await server.request("POST", "/applications", {
      body: { name: "to change", type: "private", permissions: ["token:use"] },
    });
    const { id, key } = created.body;

    const renamed = await cli(["applications", "update", id, "--name", "changed"]);
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(renamed.stdout).toMatch(/^name +changed$/m);
    expect(renamed.stdout).toMatch(/^permissions +token:use$/m);
    expect(renamed.stdout).toMatch(/^modified_at +\S+$/m);

    const ruled = await cli(["applications", "update", id, "--rule", "/x/=redact:token:search", "--json"]);
    expect(JSON.parse(ruled.stdout)).toMatchObject({
      name: "changed",
      permissions: ["token:use"],
      rules: [{ priority: 1, container: "/x/", transform: "redact", permissions: ["token:search"] }],
    });

    const regenerated = await cli(["applications", "regenerate", id, "--json"]);
    const newKey = JSON.parse(regenerated.stdout).key as string;
    expect(newKey).toMatch(/^key_prv_/);
    expect(newKey).not.toBe(key);
    expect((await send(server.url, key, "GET", "/applications/key")).status).toBe(401);
    // Authenticated now; refused only for lack of application:read.
    expect((await send(server.url, newKey, "GET", "/applications/key")).status).toBe(403);

    const other = await server.request("POST", "/applications", {
      body: { name: "other", type: "public", permissions: ["token:create"] },
    });
    const [deleted, deletedQuietly] = await Promise.all([
      cli(["applications", "delete", id]),
      cli(["applications", "delete", other.body.id, "--json"]),
    ]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe(`Deleted Application ${id}.\n`);
    expect(deletedQuietly.code, deletedQuietly.stderr).toBe(0);
    expect(deletedQuietly.stdout).toBe("");
    expect((await server.request("GET", `/applications/${other.body.id}`)).status).toBe(404);

    const again = await cli(["applications", "delete", id]);
    expectOneLineError(again, 4);
    expect(again.stderr).toBe(
      `tessera: the server refused the request (404 Not found): Application ${id} was not found\n`,
    );
  });

  it("creates a tenant whose key then works with --key, and shows the caller's tenant", async () => {
    const [created, createdJson, self, selfJson] = await Promise.all([
      cli(["tenants", "create", "--name", "acme"]),
      cli(["tenants", "create", "--name", "globex", "--json"]),
      cli(["tenants", "self"]),
      cli(["tenants", "self", "--json"]),
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^name +acme$/m);
    expect(created.stdout).toContain("Its management Application:");
    expect(created.stdout).toMatch(/^name +acme administrator$/m);
    expect(created.stdout).toMatch(/^key +key_mgt_\S+$/m);
    expect(created.stderr).toContain("shown only now");

    const globex = JSON.parse(createdJson.stdout);
    expect(globex).toMatchObject({
      name: "globex",
      application: { type: "management", tenant_id: globex.id },
    });
    expect(globex.application.key).toMatch(/^key_mgt_/);

    expect(self.stdout).toMatch(/^name +default$/m);
    const own = JSON.parse(selfJson.stdout);
    expect(own).toEqual({ id: expect.any(String), name: "default", created_at: expect.any(String) });

    const asGlobex = await cli(["tenants", "self", "--json", "--key", globex.application.key]);
    expect(JSON.parse(asGlobex.stdout)).toMatchObject({ id: globex.id, name: "globex" });

    // Shredding: only with --yes; then globex's key stops working and a second shred finds nothing.
    const unconfirmed = await cli(["tenants", "shred", globex.id]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain("shredding cannot be undone: add --yes to confirm");
    const shredded = await cli(["tenants", "shred", globex.id, "--yes"]);
    expect(shredded.code, shredded.stderr).toBe(0);
    expect(shredded.stdout).toMatch(/^tenant keys destroyed +5$/m);
    expect(shredded.stdout).toMatch(/^applications deleted +1$/m);
    const gone = await cli(["tenants", "self", "--key", globex.application.key]);
    expect(gone.code).toBe(4);
    const again = await cli(["tenants", "shred", globex.id, "--yes", "--json"]);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain("404");
  });

  it("maps every failure to its exit code with one line on stderr", async () => {
    const tokenApp = await server.request("POST", "/applications", {
      body: { name: "no admin", type: "private", permissions: ["token:use"] },
    });
    const closedPort = await freePort();
    const [unreachable, wrongKey, forbidden, missing, invalid, noKey, badUrl] = await Promise.all([
      cli(["applications", "list"], { env: { TESSERA_URL: `http://127.0.0.1:${closedPort}` } }),
      cli(["applications", "list", "--key", "key_mgt_wrong"]),
      cli(["applications", "list", "--key", tokenApp.body.key]),
      cli(["applications", "get", "00000000-0000-4000-8000-000000000000"]),
      cli([
        "applications",
        "create",
        "--name",
        "web",
        "--type",
        "public",
        "--rule",
        "/web/=show:token:create",
        "--json",
      ]),
      cli(["applications", "list"], { env: { SVC_API_KEY: "" } }),
      cli(["tenants", "self", "--url", "ftp://vault.example"]),
    ]);

    expectOneLineError(unreachable, 3);
    expect(unreachable.stderr).toBe(
      `tessera: cannot reach http://127.0.0.1:${closedPort} (ECONNREFUSED): is the server running? set TESSERA_URL or --url\n`,
    );
    expectOneLineError(wrongKey, 4);
    expect(wrongKey.stderr).toMatch(
      /^tessera: the server refused the request \(401 Unauthenticated\): .+; check SVC_API_KEY or --key\n$/,
    );
    expectOneLineError(forbidden, 4);
    expect(forbidden.stderr).toBe(
      "tessera: the server refused the request (403 Forbidden): The Application lacks the permission " +
        "application:read; use a key whose Application holds that permission\n",
    );
    expectOneLineError(missing, 4);
    expect(missing.stderr).toContain(
      "(404 Not found): Application 00000000-0000-4000-8000-000000000000 was not found",
    );
    expectOneLineError(invalid, 4);
    expect(invalid.stderr).toMatch(/^tessera: the server refused the request \(400 Validation failed\): /);
    expect(invalid.stderr).toContain("rules[0].transform: must be one of: redact, mask, reveal");
    expectOneLineError(noKey, 78);
    expect(noKey.stderr).toBe("tessera: no API key: set SVC_API_KEY or pass --key\n");
    expectOneLineError(badUrl, 78);
    expect(badUrl.stderr).toContain("must start with http:// or https://");
  });

  it("rejects a wrong command line with exit 2 and the help to read", async () => {
    const cases: [string[], string][] = [
      [
        ["applications", "list", "--fast"],
        "unknown option '--fast' (run 'tessera applications list --help' for usage)",
      ],
      [["applications", "frob"], "unknown command 'applications frob': use one of create, list, get, update"],
      [["applications"], "'tessera applications' needs a command: create, list"],
      [["applications", "get"], "missing <id> (run 'tessera applications get --help' for usage)"],
      [["applications", "get", "a", "b"], "unexpected argument 'b'"],
      [
        ["applications", "create", "--type", "private"],
        "missing --name (or pass the whole request with --body)",
      ],
      [["applications", "list", "--size", "500"], "--size must be an integer from 1 to 100"],
      [["applications", "list", "--all", "--page", "2"], "--all reads every page: leave out --page"],
      [
        ["applications", "create", "--name", "x", "--body", "app.json"],
        "--body replaces --name: pass one or the other",
      ],
      [["applications", "create", "--body", "missing.json"], "--body: cannot read missing.json (ENOENT)"],
      [["tenants", "create", "--name"], "--name needs a value"],
      [["launch"], "unknown command 'launch' (run 'tessera --help' for usage)"],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(args)));
    results.forEach((result, i) => {
      expectOneLineError(result, 2);
      expect(result.stderr).toContain(cases[i]![1]);
    });
  });
});

describe("tessera --help", () => {
  const cwd = process.cwd();

  it("lists every command at the top and in each group, and shows each command's options", async () => {
    const groups = ["applications", "tenants", "tokens", "keys"];
    const [top, linked, ...rest] = await Promise.all([
      run(["--help"], {}, cwd),
      run(["--help"], {}, cwd, { bin: LINKED_BIN }),
      ...groups.map((group) => run([group, "--help"], {}, cwd)),
      run(["applications", "create", "-h"], {}, cwd),
      run(["tokens", "search", "--help", "--unknown-flag"], {}, cwd),
    ]);
    for (const result of [top, linked, ...rest]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe("");
    }
    expect(linked.stdout).toBe(top.stdout);
    const commands = [
      "serve",
      "init",
      "migrate",
      "keys rotate",
      "keys rewrap",
      "keys rotate-master",
      ...["create", "list", "get", "update", "regenerate", "delete"].map((c) => `applications ${c}`),
      "tenants create",
      "tenants self",
      "tenants shred",
      ...["create", "get", "search", "delete", "import"].map((c) => `tokens ${c}`),
    ];
    for (const command of commands) expect(top.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    expect(top.stdout).toContain("SVC_API_KEY");
    expect(top.stdout).toContain("78 configuration error");

    const groupHelps = rest.slice(0, groups.length);
    groupHelps.forEach((result, i) => {
      expect(result.stdout).toContain(`Usage: tessera ${groups[i]} <command> [options]`);
      const names = commands.filter((c) => c.startsWith(`${groups[i]} `)).map((c) => c.split(" ")[1]);
      for (const name of names) expect(result.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
    });
    const [create, search] = rest.slice(groups.length);
    expect(create!.stdout).toMatch(/^Usage: tessera applications create --name <name> --type <type>/);
    expect(create!.stdout).toMatch(/^ {6}--rule <rule> /m);
    expect(search!.stdout).toMatch(/^Usage: tessera tokens search \[<query>\.\.\.\]/);
    expect(search!.stdout).toMatch(/^ {6}--json /m);
  });
});
