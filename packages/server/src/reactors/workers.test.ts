import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";

const MERGE_PATCH = "application/merge-patch+json";

/** Reactor code answering which version of it ran, and in which worker process. */
const versioned = (version: string) =>
  `module.exports = async () => ({ raw: { version: ${JSON.stringify(version)}, pid: Deno.pid } });`;

function isAlive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "latin1"));
  } catch {
    return false;
  }
}

async function stops(pid: number, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

describe.skipIf(STORE_UNAVAILABLE)("a reactor's workers after an update or a delete", () => {
  let server: TestServer;
  let caller: string;

  async function create(name: string, code: string): Promise<string> {
    const response = await server.request("POST", "/reactors", { body: { configuration: {}, name, code } });
    expect(response.status, response.text).toBe(201);
    return response.body.id as string;
  }

  /** Reacts and answers the worker's pid, checking the version that ran. */
  async function react(id: string, version: string): Promise<number> {
    const response = await server.request("POST", `/reactors/${id}/react`, { key: caller, body: {} });
    expect(response.status, response.text).toBe(200);
    expect(response.body.raw.version).toBe(version);
    return response.body.raw.pid as number;
  }

  beforeAll(async () => {
    server = await startTestServer();
    const app = await server.request("POST", "/applications", {
      body: { name: "caller", type: "private", permissions: ["token:use"] },
    });
    expect(app.status, app.text).toBe(201);
    caller = app.body.key;
  });
  afterAll(() => server?.close());

  it("stops the worker holding the old code when the reactor is patched, replaced or deleted", async () => {
    const id = await create("changing", versioned("v1"));
    const bystander = await create("bystander", versioned("same"));
    const bystanderPid = await react(bystander, "same");

    const v1 = await react(id, "v1");
    const patched = await server.request("PATCH", `/reactors/${id}`, {
      body: { code: versioned("v2") },
      contentType: MERGE_PATCH,
    });
    expect(patched.status, patched.text).toBe(204);
    expect(await stops(v1)).toBe(true);

    const v2 = await react(id, "v2");
    expect(v2).not.toBe(v1);
    const replaced = await server.request("PUT", `/reactors/${id}`, {
      body: { configuration: {}, name: "changing", code: versioned("v3") },
    });
    expect(replaced.status, replaced.text).toBe(200);
    expect(await stops(v2)).toBe(true);

    const v3 = await react(id, "v3");
    const deleted = await server.request("DELETE", `/reactors/${id}`);
    expect(deleted.status, deleted.text).toBe(204);
    expect(await stops(v3)).toBe(true);

    // Another reactor's worker is left alone, and still serves it warm.
    expect(isAlive(bystanderPid)).toBe(true);
    expect(await react(bystander, "same")).toBe(bystanderPid);
  });

  it("keeps the worker when an update is refused", async () => {
    const id = await create("kept", versioned("v1"));
    const pid = await react(id, "v1");
    const refused = await server.request("PATCH", `/reactors/${id}`, {
      body: { code: "module.exports = (" },
      contentType: MERGE_PATCH,
    });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body).toMatchObject({ status: 400, errors: { code: [expect.any(String)] } });
    expect(await react(id, "v1")).toBe(pid);
  });
});
