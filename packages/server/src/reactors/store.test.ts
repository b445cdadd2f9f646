import { describe, expect, it } from "vitest";
import { namePattern } from "./store.js";

describe("namePattern (the LIKE pattern of the name filter)", () => {
  it.each([
    ["stripe", "%stripe%"],
    ["Stripe EU", "%stripe eu%"],
    ["stripe*", "stripe%"],
    ["*-eu", "%-eu"],
    ["a*b*c", "a%b%c"],
    ["*", "%"],
    ["", "%%"],
    ["100%", "%100\\%%"],
    ["off_sale*", "off\\_sale%"],
    ["back\\slash", "%back\\\\slash%"],
    ["ÄRGER", "%ärger%"],
    // NFKC first: a full-width percent sign folds to "%", which must then match only itself.
    ["５０％", "%50\\%%"],
  ])("%j → %j", (filter, pattern) => {
    expect(namePattern(filter)).toBe(pattern);
  });
});
