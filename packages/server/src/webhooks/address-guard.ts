import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/**
 * Addresses a webhook may never be sent to unless the operator allows private targets: loopback, "this network",
 * private ranges, carrier-grade NAT, link-local (cloud metadata at 169.254.169.254), benchmarking, documentation,
 * multicast and reserved space — anything but the public internet (RFC 6890's special-purpose registries).
 */
const IPV4_DENIED: readonly [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

/**
 * IPv6 outside global unicast is refused whole (below); inside it, the ranges that embed or reach IPv4 space
 * (NAT64, 6to4, Teredo) and the documentation and ORCHID ranges.
 */
const IPV6_DENIED: readonly [string, number][] = [
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
];

const denied = new BlockList();
for (const [network, prefix] of IPV4_DENIED) denied.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of IPV6_DENIED) denied.addSubnet(network, prefix, "ipv6");
const globalUnicast = new BlockList();
globalUnicast.addSubnet("2000::", 3, "ipv6");

/** An IPv4 address written inside IPv6 (`::ffff:10.0.0.1`, `::ffff:a00:1`, `::10.0.0.1`), as IPv4. */
function embeddedIpv4(address: string): string | undefined {
  const match = /^::(?:ffff:(?:0:)?)?(.+)$/i.exec(address);
  if (match === null) return undefined;
  const tail = match[1]!;
  if (isIP(tail) === 4) return tail;
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(tail);
  if (hex === null) return undefined;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/** True for an address on the public internet; false for anything private, local or reserved, or not an IP. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  switch (isIP(bare)) {
    case 4:
      return !denied.check(bare, "ipv4");
    case 6: {
      const v4 = embeddedIpv4(bare);
      if (v4 !== undefined) return !denied.check(v4, "ipv4");
      return globalUnicast.check(bare, "ipv6") && !denied.check(bare, "ipv6");
    }
    default:
      return false;
  }
}

export class ForbiddenAddressError extends Error {
  readonly code = "ERR_TESSERA_FORBIDDEN_ADDRESS";
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, which is not a public address`);
    this.name = "ForbiddenAddressError";
  }
}

/**
 * A `lookup` for node:http that refuses non-public addresses at connection time. Checking the URL when it is
 * given is not enough: a name can resolve to a public address then and to 127.0.0.1 when the webhook is sent
 * (DNS rebinding), so the check belongs to the resolution the socket actually uses.
 */
export function guardedLookup(): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error !== null) return callback(error, "", 4);
      const refused = addresses.find((entry) => !isPublicAddress(entry.address));
      if (refused !== undefined) {
        return callback(new ForbiddenAddressError(hostname, refused.address), "", 4);
      }
      if (options.all === true) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (first === undefined) return callback(new Error(`${hostname} has no address`), "", 4);
      callback(null, first.address, first.family);
    });
  };
}
