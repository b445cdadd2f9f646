import { BlockList, isIP } from "node:net";

/**
 * Special-purpose IP addresses: nothing Tessera sends on behalf of a tenant (a webhook, a reactor's request) may
 * reach them. The one list for both (webhooks/address-guard.ts refuses them for callbacks unless the operator
 * allows private targets; reactors/sandbox/setup.ts denies them to reactor code), so the two cannot drift apart.
 *
 * Every entry of IANA's IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, updated by RFC 8190, and the
 * RFCs that have added to them since), with IPv4 multicast (RFC 5771) and IPv6 multicast (RFC 4291), whether IANA
 * marks the block globally reachable or not: AS112, AMT and the anycast addresses are reachable, but no tenant has
 * a reason to send card data there, so the list is the registries as they are rather than a judgement per entry.
 * IPv6 outside global unicast (2000::/3) is refused as a whole besides (isSpecialPurpose): it holds the loopback,
 * IPv4-mapped and IPv4-compatible forms, unique-local, link-local and multicast space, and IANA's reserved blocks.
 */
export interface SpecialRange {
  /** The block in CIDR notation. */
  readonly cidr: string;
  /** Its name in the registry. */
  readonly name: string;
  /** Where it is defined. */
  readonly rfc: string;
}

export const IPV4_SPECIAL_RANGES: readonly SpecialRange[] = Object.freeze([
  { cidr: "0.0.0.0/8", name: '"This network"', rfc: "RFC 791 §3.2" },
  { cidr: "0.0.0.0/32", name: '"This host on this network"', rfc: "RFC 1122 §3.2.1.3" },
  { cidr: "10.0.0.0/8", name: "Private-Use", rfc: "RFC 1918" },
  { cidr: "100.64.0.0/10", name: "Shared Address Space (carrier-grade NAT)", rfc: "RFC 6598" },
  { cidr: "127.0.0.0/8", name: "Loopback", rfc: "RFC 1122 §3.2.1.3" },
  { cidr: "169.254.0.0/16", name: "Link Local (cloud metadata at 169.254.169.254)", rfc: "RFC 3927" },
  { cidr: "172.16.0.0/12", name: "Private-Use", rfc: "RFC 1918" },
  { cidr: "192.0.0.0/24", name: "IETF Protocol Assignments", rfc: "RFC 6890 §2.1" },
  { cidr: "192.0.0.0/29", name: "IPv4 Service Continuity Prefix", rfc: "RFC 7335" },
  { cidr: "192.0.0.8/32", name: "IPv4 dummy address", rfc: "RFC 7600" },
  { cidr: "192.0.0.9/32", name: "Port Control Protocol Anycast", rfc: "RFC 7723" },
  { cidr: "192.0.0.10/32", name: "Traversal Using Relays around NAT Anycast", rfc: "RFC 8155" },
  { cidr: "192.0.0.170/32", name: "NAT64/DNS64 Discovery", rfc: "RFC 8880, RFC 7050" },
  { cidr: "192.0.0.171/32", name: "NAT64/DNS64 Discovery", rfc: "RFC 8880, RFC 7050" },
  { cidr: "192.0.2.0/24", name: "Documentation (TEST-NET-1)", rfc: "RFC 5737" },
  { cidr: "192.31.196.0/24", name: "AS112-v4", rfc: "RFC 7535" },
  { cidr: "192.52.193.0/24", name: "AMT", rfc: "RFC 7450" },
  { cidr: "192.88.99.0/24", name: "Deprecated (6to4 Relay Anycast)", rfc: "RFC 7526" },
  { cidr: "192.168.0.0/16", name: "Private-Use", rfc: "RFC 1918" },
  { cidr: "192.175.48.0/24", name: "Direct Delegation AS112 Service", rfc: "RFC 7534" },
  { cidr: "198.18.0.0/15", name: "Benchmarking", rfc: "RFC 2544" },
  { cidr: "198.51.100.0/24", name: "Documentation (TEST-NET-2)", rfc: "RFC 5737" },
  { cidr: "203.0.113.0/24", name: "Documentation (TEST-NET-3)", rfc: "RFC 5737" },
  { cidr: "224.0.0.0/4", name: "Multicast", rfc: "RFC 5771" },
  { cidr: "240.0.0.0/4", name: "Reserved", rfc: "RFC 1112 §4" },
  { cidr: "255.255.255.255/32", name: "Limited Broadcast", rfc: "RFC 8190, RFC 919 §7" },
]);

export const IPV6_SPECIAL_RANGES: readonly SpecialRange[] = Object.freeze([
  { cidr: "::1/128", name: "Loopback Address", rfc: "RFC 4291" },
  { cidr: "::/128", name: "Unspecified Address", rfc: "RFC 4291" },
  { cidr: "::ffff:0:0/96", name: "IPv4-mapped Address", rfc: "RFC 4291" },
  { cidr: "64:ff9b::/96", name: "IPv4-IPv6 Translation (NAT64)", rfc: "RFC 6052" },
  { cidr: "64:ff9b:1::/48", name: "IPv4-IPv6 Translation, local use", rfc: "RFC 8215" },
  { cidr: "100::/64", name: "Discard-Only Address Block", rfc: "RFC 6666" },
  { cidr: "2001::/23", name: "IETF Protocol Assignments", rfc: "RFC 2928" },
  { cidr: "2001::/32", name: "TEREDO", rfc: "RFC 4380, RFC 8190" },
  { cidr: "2001:1::1/128", name: "Port Control Protocol Anycast", rfc: "RFC 7723" },
  { cidr: "2001:1::2/128", name: "Traversal Using Relays around NAT Anycast", rfc: "RFC 8155" },
  { cidr: "2001:1::3/128", name: "DNS-SD Service Registration Protocol Anycast", rfc: "RFC 9665" },
  { cidr: "2001:2::/48", name: "Benchmarking", rfc: "RFC 5180" },
  { cidr: "2001:3::/32", name: "AMT", rfc: "RFC 7450" },
  { cidr: "2001:4:112::/48", name: "AS112-v6", rfc: "RFC 7535" },
  { cidr: "2001:10::/28", name: "Deprecated (previously ORCHID)", rfc: "RFC 4843" },
  { cidr: "2001:20::/28", name: "ORCHIDv2", rfc: "RFC 7343" },
  { cidr: "2001:30::/28", name: "Drone Remote ID Protocol Entity Tags (DETs) Prefix", rfc: "RFC 9374" },
  { cidr: "2001:db8::/32", name: "Documentation", rfc: "RFC 3849" },
  { cidr: "2002::/16", name: "6to4", rfc: "RFC 3056" },
  { cidr: "2620:4f:8000::/48", name: "Direct Delegation AS112 Service", rfc: "RFC 7534" },
  { cidr: "3fff::/20", name: "Documentation", rfc: "RFC 9637" },
  { cidr: "5f00::/16", name: "Segment Routing (SRv6) SIDs", rfc: "RFC 9602" },
  { cidr: "fc00::/7", name: "Unique-Local", rfc: "RFC 4193, RFC 8190" },
  { cidr: "fe80::/10", name: "Link-Local Unicast", rfc: "RFC 4291" },
  { cidr: "ff00::/8", name: "Multicast", rfc: "RFC 4291 §2.7" },
]);

/** IPv6 global unicast (RFC 4291 §2.4; IANA's IPv6 Address Space registry): all IPv6 outside it is refused. */
export const IPV6_GLOBAL_UNICAST = "2000::/3";

function blockList(ranges: readonly SpecialRange[], family: "ipv4" | "ipv6"): BlockList {
  const list = new BlockList();
  for (const { cidr } of ranges) {
    const [network, prefix] = cidr.split("/");
    list.addSubnet(network!, Number(prefix), family);
  }
  return list;
}

const special4 = blockList(IPV4_SPECIAL_RANGES, "ipv4");
const special6 = blockList(IPV6_SPECIAL_RANGES, "ipv6");
const globalUnicast = blockList([{ cidr: IPV6_GLOBAL_UNICAST, name: "", rfc: "" }], "ipv6");

/**
 * Whether `address` (an IP address, IPv6 optionally in brackets or with a zone) is special-purpose; anything that
 * is not an IP address counts as one, so that a caller can never mistake a host name for a public address.
 * IPv4 written inside IPv6 (`::ffff:10.0.0.1`, `::10.0.0.1`, NAT64, 6to4) is refused with its whole block.
 */
export function isSpecialPurpose(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  switch (isIP(bare)) {
    case 4:
      return special4.check(bare, "ipv4");
    case 6:
      return !globalUnicast.check(bare, "ipv6") || special6.check(bare, "ipv6");
    default:
      return true;
  }
}
