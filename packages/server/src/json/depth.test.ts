import { describe, expect, it } from "vitest";
import { nestsDeeperThan } from "./depth.js";

describe("nestsDeeperThan", () => {
  const nest = (levels: number): unknown => {
    let value: unknown = "leaf";
    for (let i = 0; i < levels; i++) value = i % 2 === 0 ? { a: value } : [value];
    return value;
  };

  it.each([
    [0, 0, false],
    [1, 0, true],
    [1, 1, false],
    [3, 2, true],
    [3, 3, false],
    [33, 32, true],
    [32, 32, false],
  ])("%i levels against a limit of %i: %s", (levels, max, deeper) => {
    expect(nestsDeeperThan(nest(levels), max)).toBe(deeper);
  });

  it("handles nesting far past the call stack without recursion", () => {
    expect(nestsDeeperThan(nest(200_000), 64)).toBe(true);
  });
});
