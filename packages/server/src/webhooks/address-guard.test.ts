import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPublicAddress } from "./address-guard.js";

describe("isPublicAddress", () => {
  it.each([
    "127.0.0.1",
    "127.255.255.254",
    "0.0.0.0",
    "10.1.2.3",
    "100.64.0.1",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "192.0.0.8",
    "198.18.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "[::1]",
    "fe80::1",
    "fe80::1%eth0",
    "fc00::1",
    "fd12:3456::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:169.254.169.254",
    "::ffff:0:10.0.0.1",
    "::10.0.0.1",
    "64:ff9b::a00:1",
    "2002:7f00:1::",
    "2001:db8::1",
    // IPv4 written inside IPv6 is refused whole, public IPv4 included: a webhook host has no reason to use it.
    "::ffff:8.8.8.8",
    "3fff::1",
    "2620:4f:8000::1",
    "192.31.196.1",
    "192.52.193.1",
    "192.175.48.1",
    "localhost",
    "example.com",
    "",
  ])("refuses %s", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "[2a00:1450::1]"])(
    "allows %s",
    (address) => {
      expect(isPublicAddress(address)).toBe(true);
    },
  );

  it("refuses every address of the private, loopback and link-local IPv4 ranges, in every IPv6 spelling", () => {
    const inRange = (prefix: number, base: [number, number, number, number]) =>
      fc.integer({ min: 0, max: 2 ** (32 - prefix) - 1 }).map((offset) => {
        const value = (((base[0] << 24) | (base[1] << 16) | (base[2] << 8) | base[3]) >>> 0) + offset;
        return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];
      });
    const ranges = fc.oneof(
      inRange(8, [127, 0, 0, 0]),
      inRange(8, [10, 0, 0, 0]),
      inRange(12, [172, 16, 0, 0]),
      inRange(16, [192, 168, 0, 0]),
      inRange(16, [169, 254, 0, 0]),
      inRange(10, [100, 64, 0, 0]),
    );
    fc.assert(
      fc.property(ranges, (octets) => {
        const dotted = octets.join(".");
        const hex = `${((octets[0]! << 8) | octets[1]!).toString(16)}:${((octets[2]! << 8) | octets[3]!).toString(16)}`;
        for (const form of [dotted, `::ffff:${dotted}`, `::ffff:${hex}`, `::${dotted}`]) {
          expect(isPublicAddress(form), form).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });
});
