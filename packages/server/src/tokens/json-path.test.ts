import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonPathError, parseJsonPath, selectJsonPath, type JsonPathSegment } from "./json-path.js";

describe("parseJsonPath", () => {
  it.each<[string, JsonPathSegment[]]>([
    ["$", []],
    ["$.books[0].author", ["books", 0, "author"]],
    ["$['books'][12][\"title\"]", ["books", 12, "title"]],
    ["$['a.b']['it\\'s']", ["a.b", "it's"]],
    ["$.first_name.x-y.0", ["first_name", "x-y", "0"]],
  ])("%s", (path, segments) => {
    expect(parseJsonPath(path)).toEqual(segments);
  });

  it.each([
    ["books", "must start with $"],
    ["$..author", "offset 1"],
    ["$.books[*]", "offset 7"],
    ["$.books[?(@.price < 10)].title", "offset 7"],
    ["$.books[0:2]", "offset 7"],
    ["$.books[-1]", "offset 7"],
    ["$.books[0,1]", "offset 7"],
    ["$.*", "offset 1"],
    ["$.", "offset 1"],
    ["$['unclosed", "offset 1"],
    ["$[99999999999999999999]", "offset 1"],
    ["$ .a", "offset 1"],
  ])("rejects %s", (path, problem) => {
    expect(() => parseJsonPath(path)).toThrow(JsonPathError);
    expect(() => parseJsonPath(path)).toThrow(problem);
  });

  it("never throws anything but JsonPathError", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (path) => {
        try {
          parseJsonPath(`$${path}`);
        } catch (error) {
          expect(error).toBeInstanceOf(JsonPathError);
        }
      }),
    );
  });
});

describe("selectJsonPath", () => {
  const doc = JSON.parse(
    '{"books":[{"author":"Herman Melville"}],"__proto__":{"own":true},"n":null}',
  ) as unknown;

  it.each<[string, unknown]>([
    ["$", doc],
    ["$.books[0].author", "Herman Melville"],
    ["$.books[1]", undefined],
    ["$.books.length", undefined],
    ["$.books[0].author.length", undefined],
    ["$.missing.deeper", undefined],
    ["$.constructor", undefined],
    ["$.books[0].constructor", undefined],
    ["$['__proto__'].own", true],
    ["$.n", null],
    ["$.n.x", undefined],
  ])("%s", (path, expected) => {
    expect(selectJsonPath(doc, parseJsonPath(path))).toEqual(expected);
  });
});
