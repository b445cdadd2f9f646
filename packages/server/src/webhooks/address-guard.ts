import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import { isSpecialPurpose } from "../net/special-ranges.js";

/**
 * True for an address on the public internet; false for any special-purpose address (net/special-ranges.ts: the
 * IANA registries, multicast, IPv6 outside global unicast, IPv4 written inside IPv6), and for anything that is not
 * an IP address. Webhooks are sent only to addresses for which this holds, unless the operator allows private
 * targets (TESSERA_WEBHOOK_ALLOW_PRIVATE).
 */
export function isPublicAddress(address: string): boolean {
  return !isSpecialPurpose(address);
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
