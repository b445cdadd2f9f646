import { isIP } from "node:net";
import type { SpecialRange } from "../src/net/special-ranges.js";

/** An IP address as an integer, and back (IPv6 written in full, without `::`). */
export function toBigInt(address: string): bigint {
  if (isIP(address) === 4) {
    return address.split(".").reduce((value, octet) => (value << 8n) | BigInt(octet), 0n);
  }
  const [head, tail] = address.split("::") as [string, string | undefined];
  const groups = (text: string | undefined) => (text === undefined || text === "" ? [] : text.split(":"));
  const left = groups(head);
  const right = groups(tail);
  const all =
    tail === undefined
      ? left
      : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return all.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

export function fromBigInt(value: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join(".");
  return Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(
    ":",
  );
}

/**
 * The first and the last address of a range, the one after its first (its first usable host), its size, and
 * whether the range is written as its network address (no host bits set).
 */
export function addressesOf(range: SpecialRange): {
  first: string;
  last: string;
  inside: string;
  family: 4 | 6;
  size: bigint;
  aligned: boolean;
} {
  const [network, prefixText] = range.cidr.split("/") as [string, string];
  const family = isIP(network) === 4 ? 4 : 6;
  const bits = family === 4 ? 32n : 128n;
  const size = 1n << (bits - BigInt(prefixText));
  const first = toBigInt(network);
  const last = first + size - 1n;
  return {
    first: fromBigInt(first, family),
    last: fromBigInt(last, family),
    inside: fromBigInt(size > 1n ? first + 1n : first, family),
    family,
    size,
    aligned: first % size === 0n,
  };
}

/** `host` as it is written in a URL. */
export function urlHost(address: string): string {
  return address.includes(":") ? `[${address}]` : address;
}
