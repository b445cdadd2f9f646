import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { checkReactorCode, SHIM_PARAMETERS } from "./code-check.js";

describe("checkReactorCode", () => {
  it.each([
    ["const x = ;", { message: "Unexpected token ';'", line: 1, column: 11 }],
    [
      "module.exports = 1;\nlet a = 1;\n  let a = 2;",
      { message: "Identifier 'a' has already been declared", line: 3, column: 7 },
    ],
    // A stray brace cannot close the shim and run code outside it: the body is parsed on its own.
    [
      "module.exports = async () => ({ raw: 1 })\n}\n(function escape() {})",
      { message: "Unexpected token '}'", line: 2, column: 1 },
    ],
    ["module.exports = async () => {", { message: "Unexpected end of input", line: 1 }],
    [
      "const a = 1;\nconst b = require('lodash');",
      { message: "'lodash' is not an allowed module", line: 2, column: 11 },
    ],
    ["require(`child_process`)", { message: "'child_process' is not an allowed module", line: 1, column: 1 }],
  ])("refuses %j with its position", (code, problem) => {
    expect(checkReactorCode(code)).toEqual({ ok: false, problems: [problem] });
  });

  it("lists the allowed modules the code requires, once each", () => {
    const code = `const { BadRequestError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
      const crypto = require('crypto'); const again = require("crypto"); const zlib = require("node:zlib");
      module.exports = async () => ({ raw: crypto.randomUUID() });`;
    expect(checkReactorCode(code)).toEqual({
      ok: true,
      modules: ["@basis-theory/basis-theory-reactor-formulas-sdk-js", "crypto", "node:zlib"],
    });
  });

  it("accepts Node 16 code that declares Buffer, process or global itself, as Node's own wrapper does", () => {
    const code = `const { Buffer } = require("buffer");
      const process = require("process");
      let global = { note: "shadowed" };
      const querystring = require('querystring'); const { Readable } = require("stream");
      const https = require("https"); const crypto = require("node:crypto");
      module.exports = async () => ({ raw: Buffer.from(process.title).toString("hex") });`;
    expect(checkReactorCode(code)).toEqual({
      ok: true,
      modules: ["buffer", "https", "node:crypto", "process", "querystring", "stream"],
    });
  });

  it("allows the server's npm packages, by name and only those", () => {
    const code = `const axios = require("axios"); const { v4 } = require('uuid');
      module.exports = async () => ({ raw: v4() });`;
    expect(checkReactorCode(code)).toEqual({ ok: true, modules: ["axios", "uuid"] });
    expect(checkReactorCode(code, [{ name: "uuid", version: "11.1.1" }])).toEqual({
      ok: false,
      problems: [{ message: "'axios' is not an allowed module", line: 1, column: 15 }],
    });
    expect(checkReactorCode("require('uuid@11.1.1'); require('npm:uuid');")).toEqual({
      ok: false,
      problems: [
        { message: "'uuid@11.1.1' is not an allowed module", line: 1, column: 1 },
        { message: "'npm:uuid' is not an allowed module", line: 1, column: 25 },
      ],
    });
  });

  it("accepts exactly what a function body accepts, and never throws", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(..."(){}[];,.=>'\"`/*+-\n abcrequire") }), (code) => {
        const check = checkReactorCode(code);
        let compiles = true;
        try {
          // eslint-disable-next-line @typescript-eslint/no-implied-eval -- what harness.js does with the code
          new Function(...SHIM_PARAMETERS, code);
        } catch {
          compiles = false;
        }
        if (check.ok) expect(compiles).toBe(true);
        else if (compiles)
          expect(check.problems.every((p) => p.message.endsWith("is not an allowed module"))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it("compiles against the parameters the Deno harness gives reactor code, in its order", () => {
    const harness = readFileSync(new URL("./harness.js", import.meta.url), "utf8");
    const table = /const shim = \[\n([\s\S]*?)\n {2}\];/.exec(harness)?.[1];
    expect(table).toBeDefined();
    const names = [...table!.matchAll(/^ {4}\["([^"]+)", /gm)].map((m) => m[1]);
    expect(names).toEqual([...SHIM_PARAMETERS]);
    // Every row of the table is one parameter: nothing else stands in it.
    expect(table!.split("\n")).toHaveLength(SHIM_PARAMETERS.length);
  });
});
