import { isIP, isIPv4, isIPv6 } from "node:net";

/**
 * The key one source address is limited under. An IPv6 client usually holds a whole /64 (one customer's
 * network), and could otherwise get a fresh bucket per request by walking through it; so IPv6 is limited per
 * /64. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, as a dual-stack listener reports IPv4 clients) is the
 * IPv4 address it carries.
 */
export function addressKey(ip: string): string {
  if (isIPv4(ip)) return ip;
  const zoneless = ip.split("%", 1)[0]!;
  if (!isIPv6(zoneless)) return ip;
  const groups = expandIPv6(zoneless);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address; a dotted IPv4 tail becomes the last two. */
function expandIPv6(ip: string): number[] {
  let text = ip;
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail !== null) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", rest] = text.split("::", 2);
  const left = head === "" ? [] : head.split(":");
  const right = rest === undefined || rest === "" ? [] : rest.split(":");
  const zeros = rest === undefined ? [] : Array<string>(8 - left.length - right.length).fill("0");
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16));
}

/** `192.0.2.1`, `2001:db8::/32`, `10.0.0.0/8`: an address, or a CIDR range with a prefix the family allows. */
export function isAddressOrRange(entry: string): boolean {
  const [address = "", prefix, extra] = entry.split("/");
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}
