// docs/compatibility.md kept true (issue 18): its tables of endpoints and response fields are read here and checked
// against the OpenAPI document the server generates from its route schemas, so a route or field added, removed or
// renamed without the page changing fails this test.
import { readFileSync } from "node:fs";
import { openApiDocument } from "@tessera/server";
import { BUILTIN_MODULES } from "../packages/server/src/reactors/sandbox/modules.js";
import { beforeAll, describe, expect, it } from "vitest";

const PAGE = readFileSync(new URL("../docs/compatibility.md", import.meta.url), "utf8");
const STATUSES = new Set(["same", "differs", "Tessera only", "missing"]);

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
interface Schema {
  properties?: Record<string, unknown>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

/** The rows of the Markdown table under `## <heading>`, as [first cell without backticks, status]. */
function rows(heading: string): [string, string][] {
  const start = PAGE.indexOf(`\n## ${heading}\n`);
  if (start === -1) throw new Error(`docs/compatibility.md has no section "${heading}"`);
  const end = PAGE.indexOf("\n## ", start + 1);
  const lines = PAGE.slice(start, end === -1 ? undefined : end).split("\n");
  return lines
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const [first, status] = line
        .split("|")
        .slice(1, 3)
        .map((cell) => cell.trim());
      return [first!.replaceAll("`", ""), status!];
    });
}

/** `/reactors/{id}/results/{id}` and `/reactors/{id}/invocations/{invocation_id}` alike: parameters unnamed. */
const shape = (path: string) => path.replace(/\{[^}]+\}/g, "{}");

describe("docs/compatibility.md", () => {
  let document: Document;
  beforeAll(async () => {
    document = (await openApiDocument()) as Document;
  });

  const operations = () =>
    Object.entries(document.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${shape(path)}`),
    );

  it("gives every row one of the status words", () => {
    for (const heading of [
      "Transport",
      "Endpoints",
      "Pagination",
      "Token fields",
      "Application fields",
      "Reactor fields",
    ]) {
      for (const [name, status] of rows(heading)) expect(STATUSES, `${heading}: ${name}`).toContain(status);
    }
  });

  it("lists every API route, and calls missing only what the server does not have", () => {
    const documented = new Map(rows("Endpoints").map(([endpoint, status]) => [shape(endpoint), status]));
    const served = new Set(operations());
    for (const operation of served) {
      // Probes, not API.
      if (operation.endsWith("/healthz") || operation.endsWith("/readyz")) continue;
      expect(documented.get(operation), `${operation} is served but not on the page`).toBeDefined();
    }
    for (const [endpoint, status] of documented) {
      if (status === "missing")
        expect(served, `${endpoint} is served but called missing`).not.toContain(endpoint);
      else expect(served, `${endpoint} is on the page but not served`).toContain(endpoint);
    }
  });

  /** The properties of a route's 2xx JSON answer. */
  function answerFields(method: string, path: string, status: string): string[] {
    const schema = document.paths[path]?.[method]?.responses[status]?.content?.["application/json"]?.schema;
    if (schema?.properties === undefined) throw new Error(`${method} ${path} ${status} has no object schema`);
    return Object.keys(schema.properties);
  }

  it.each([
    ["Token fields", [["get", "/tokens/{id}", "200"]]],
    [
      "Application fields",
      [
        ["get", "/applications/{id}", "200"],
        ["post", "/applications", "201"],
      ],
    ],
    [
      "Reactor fields",
      [
        ["get", "/reactors/{id}", "200"],
        ["post", "/reactors", "201"],
      ],
    ],
  ] as const)("%s: a field is in the answers exactly when the page says it is", (heading, answers) => {
    const fields = new Set(answers.flatMap(([method, path, status]) => answerFields(method, path, status)));
    const documented = new Map(rows(heading));
    for (const field of fields)
      expect(documented.get(field), `${field} is answered but not on the page`).toBeDefined();
    for (const [field, status] of documented) {
      if (status === "missing")
        expect(fields, `${field} is answered but called missing`).not.toContain(field);
      else expect(fields, `${field} is on the page but never answered`).toContain(field);
    }
  });

  it("lists exactly the built-in modules reactor code may require", () => {
    const section = PAGE.slice(PAGE.indexOf("\n## Reactor code\n"));
    const line = section.slice(section.indexOf("- `require` serves"), section.indexOf("the error classes"));
    const listed = [...line.matchAll(/`([a-z]+)`/g)]
      .map((match) => match[1])
      .filter((name) => name !== "require");
    expect(listed).toEqual([...BUILTIN_MODULES]);
  });
});
