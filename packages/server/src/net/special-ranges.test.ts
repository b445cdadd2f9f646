import { BlockList } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addressesOf, fromBigInt, toBigInt } from "../../test/special-ranges.js";
import { IPV4_SPECIAL_RANGES, IPV6_SPECIAL_RANGES, isSpecialPurpose } from "./special-ranges.js";

const RANGES = [...IPV4_SPECIAL_RANGES, ...IPV6_SPECIAL_RANGES];

describe("the special-purpose address ranges", () => {
  it("hold the blocks the issue names and the registries' well-known ones, each with its RFC", () => {
    const cidrs = RANGES.map((range) => range.cidr);
    for (const cidr of [
      "0.0.0.0/8",
      "10.0.0.0/8",
      "100.64.0.0/10",
      "127.0.0.0/8",
      "169.254.0.0/16",
      "172.16.0.0/12",
      "192.0.0.0/24",
      "192.168.0.0/16",
      "198.18.0.0/15",
      "224.0.0.0/4",
      "240.0.0.0/4",
      "::1/128",
      "::ffff:0:0/96",
      "64:ff9b::/96",
      "2001:db8::/32",
      "2002::/16",
      "fc00::/7",
      "fe80::/10",
      "ff00::/8",
    ]) {
      expect(cidrs).toContain(cidr);
    }
    for (const range of RANGES) {
      expect(range.rfc, range.cidr).toMatch(/^RFC \d+/);
      expect(range.name, range.cidr).not.toBe("");
      // Valid for Node's BlockList, and written as its network address: host bits set would mean another block.
      const [network, prefix] = range.cidr.split("/") as [string, string];
      expect(() =>
        new BlockList().addSubnet(network, Number(prefix), network.includes(":") ? "ipv6" : "ipv4"),
      ).not.toThrow();
      expect(addressesOf(range).aligned, range.cidr).toBe(true);
    }
  });

  it.each(RANGES.map((range) => [range.cidr, range] as const))(
    "counts %s special, from its first address to its last",
    (_cidr, range) => {
      const { first, last, inside } = addressesOf(range);
      expect(isSpecialPurpose(first), first).toBe(true);
      expect(isSpecialPurpose(inside), inside).toBe(true);
      expect(isSpecialPurpose(last), last).toBe(true);
    },
  );

  it("counts every address of every range special, and every IPv6 address outside global unicast", () => {
    const inRange = (range: (typeof RANGES)[number]) => {
      const { first, family, size } = addressesOf(range);
      return fc
        .bigInt({ min: 0n, max: size - 1n })
        .map((offset) => fromBigInt(toBigInt(first) + offset, family));
    };
    fc.assert(
      fc.property(fc.oneof(...RANGES.map(inRange)), (address) => {
        expect(isSpecialPurpose(address), address).toBe(true);
      }),
      { numRuns: 2_000 },
    );
    // Outside 2000::/3: 0000::/3, 4000::/2, 8000::/1.
    const outsideGlobal = fc
      .bigInt({ min: 0n, max: (1n << 128n) - 1n })
      .filter((value) => value >> 125n !== 1n)
      .map((value) => fromBigInt(value, 6));
    fc.assert(
      fc.property(outsideGlobal, (address) => {
        expect(isSpecialPurpose(address), address).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1",
    "100.128.0.1",
    "192.0.1.1",
    "198.20.0.1",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001::200e",
    "[2a00:1450::1]",
  ])("counts %s public", (address) => {
    expect(isSpecialPurpose(address)).toBe(false);
  });

  it.each(["localhost", "example.com", "", "1.2.3", "::g"])(
    "counts %j, not an IP address, special",
    (text) => {
      expect(isSpecialPurpose(text)).toBe(true);
    },
  );

  it("counts IPv4 written inside IPv6 special, whatever the IPv4 address", () => {
    for (const address of [
      "::ffff:8.8.8.8",
      "::ffff:808:808",
      "::8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ]) {
      expect(isSpecialPurpose(address), address).toBe(true);
    }
  });
});
