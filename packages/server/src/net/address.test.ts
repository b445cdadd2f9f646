import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addressKey } from "./address.js";

describe("addressKey", () => {
  it.each([
    ["192.0.2.1", "192.0.2.1"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::FFFF:c000:201", "192.0.2.1"],
    ["::1", "0:0:0:0::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["2001:0db8:0000:0000:ffff:ffff:ffff:ffff", "2001:db8:0:0::/64"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:db8:1::", "2001:db8:1:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["2001:db8::192.0.2.1", "2001:db8:0:0::/64"],
    ["not an address", "not an address"],
  ])("%s is limited as %s", (ip, key) => {
    expect(addressKey(ip)).toBe(key);
  });

  it("gives every address of one /64 the same key, and addresses of different /64s different keys", () => {
    const group = fc.integer({ min: 0, max: 0xffff });
    const groups = fc.array(group, { minLength: 8, maxLength: 8 });
    const text = (g: number[]) => g.map((n) => n.toString(16)).join(":");
    fc.assert(
      fc.property(groups, groups, (a, b) => {
        const mixed = [...a.slice(0, 4), ...b.slice(4)];
        // Not IPv4-mapped, which is keyed as the IPv4 address it carries.
        for (const g of [a, b, mixed]) fc.pre(!(g.slice(0, 5).every((n) => n === 0) && g[5] === 0xffff));
        const samePrefix = a.slice(0, 4).join() === b.slice(0, 4).join();
        expect(addressKey(text(a)) === addressKey(text(b))).toBe(samePrefix);
        expect(addressKey(text(mixed))).toBe(addressKey(text(a)));
      }),
    );
  });
});
