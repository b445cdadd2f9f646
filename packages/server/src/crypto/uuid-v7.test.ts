import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { uuidv7 } from "./uuid-v7.js";

describe("uuidv7", () => {
  it("is a version 7, variant 10 UUID carrying the millisecond timestamp", () => {
    const id = uuidv7(0x0123456789ab);
    expect(id).toMatch(/^01234567-89ab-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("strictly increases within this process, even within one millisecond and across clock steps back", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_050 }), {
          minLength: 2,
          maxLength: 500,
        }),
        (times) => {
          const ids = times.map((t) => uuidv7(t));
          for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
        },
      ),
    );
  });
});
