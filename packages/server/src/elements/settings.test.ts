import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../config.js";
import { framePolicy } from "./headers.js";

const KEY = Buffer.alloc(32, 7).toString("base64");

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig({ TESSERA_MASTER_KEY: KEY, ...env }, "/srv");
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe("TESSERA_ELEMENTS_ORIGINS and TESSERA_ELEMENTS_DEMO", () => {
  it("default to no merchant origin, and the demo in development only", () => {
    expect(loadConfig({}, "/srv").elements).toEqual({ origins: [], demo: true });
    expect(loadConfig({ NODE_ENV: "production", TESSERA_MASTER_KEY: KEY }, "/srv").elements).toEqual({
      origins: [],
      demo: false,
    });
  });

  it("read origins as a browser writes them: lower-case, default port left out, duplicates once", () => {
    const config = loadConfig(
      {
        TESSERA_ELEMENTS_ORIGINS:
          " https://Shop.Example.com:443 ,http://127.0.0.1:8080,https://shop.example.com,, http://[::1]:3001",
        TESSERA_ELEMENTS_DEMO: "false",
      },
      "/srv",
    );
    expect(config.elements).toEqual({
      origins: ["https://shop.example.com", "http://127.0.0.1:8080", "http://[::1]:3001"],
      demo: false,
    });
    expect(Object.isFrozen(config.elements.origins)).toBe(true);
  });

  it("report every entry that is not an origin, at once", () => {
    const bad = [
      "https://shop.example.com/",
      "https://shop.example.com/checkout",
      "https://*.example.com",
      "*",
      "shop.example.com",
      "ftp://shop.example.com",
      "https://user@shop.example.com",
      "https://shop.example.com?x=1",
      "'self'",
      "null",
    ];
    const problems = problemsOf({ TESSERA_ELEMENTS_ORIGINS: bad.join(",") });
    expect(problems).toHaveLength(bad.length);
    for (const [index, entry] of bad.entries()) {
      expect(problems[index]).toBe(
        `TESSERA_ELEMENTS_ORIGINS: ${JSON.stringify(entry)} is not an origin: give scheme://host[:port] of a page, ` +
          "like https://shop.example.com, without a path, a trailing slash or a wildcard",
      );
    }
  });

  it("refuse plain http in production, except on loopback", () => {
    expect(
      problemsOf({
        NODE_ENV: "production",
        TESSERA_ELEMENTS_ORIGINS:
          "http://shop.example.com,http://localhost:8080,http://127.0.0.1,http://[::1]:81",
      }),
    ).toEqual([
      "TESSERA_ELEMENTS_ORIGINS: http://shop.example.com is plain http; in production a checkout page must be " +
        "https (anyone on the network could replace the page around the fields)",
    ]);
    expect(problemsOf({ TESSERA_ELEMENTS_ORIGINS: "http://shop.example.com" })).toEqual([]);
  });

  it("take the demo flag as true or false only, in production too", () => {
    expect(problemsOf({ TESSERA_ELEMENTS_DEMO: "yes" })).toEqual([
      "TESSERA_ELEMENTS_DEMO must be true or false",
    ]);
    expect(
      loadConfig({ NODE_ENV: "production", TESSERA_MASTER_KEY: KEY, TESSERA_ELEMENTS_DEMO: "true" }).elements
        .demo,
    ).toBe(true);
  });

  it("cap the list at 100 origins", () => {
    const many = Array.from({ length: 101 }, (_, i) => `https://shop${i}.example.com`).join(",");
    expect(problemsOf({ TESSERA_ELEMENTS_ORIGINS: many })).toEqual([
      "TESSERA_ELEMENTS_ORIGINS: at most 100 origins",
    ]);
  });
});

describe("framePolicy", () => {
  it("lets the allowed origins embed the field, the vault itself only with the demo, nobody otherwise", () => {
    const ancestors = (origins: string[], demo: boolean) =>
      /frame-ancestors (.*)$/.exec(framePolicy({ origins, demo }))![1];
    expect(ancestors([], false)).toBe("'none'");
    expect(ancestors([], true)).toBe("'self'");
    expect(ancestors(["https://a.example", "https://b.example"], false)).toBe(
      "https://a.example https://b.example",
    );
    expect(ancestors(["https://a.example"], true)).toBe("'self' https://a.example");
  });
});
