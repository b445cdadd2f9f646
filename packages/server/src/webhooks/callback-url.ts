import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { isPublicAddress } from "./address-guard.js";

export const MAX_CALLBACK_URL_LENGTH = 2_048;

export interface CallbackUrlPolicy {
  /** TESSERA_WEBHOOK_ALLOW_PRIVATE: loopback, private and link-local targets allowed (tests, closed networks). */
  readonly allowPrivate: boolean;
  /** Every address a host name resolves to. */
  readonly resolve?: (host: string) => Promise<string[]>;
}

async function resolveAll(host: string): Promise<string[]> {
  return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
}

/**
 * What is wrong with a callback URL, if anything: it must be absolute http(s) without credentials, and, unless
 * private targets are allowed, its host must resolve only to public addresses. The address is checked again when
 * each webhook is sent (address-guard.ts), since DNS may answer differently by then.
 */
export async function callbackUrlProblem(
  text: string,
  policy: CallbackUrlPolicy,
): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute http or https URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http or https URL";
  if (url.username !== "" || url.password !== "") return "must not contain credentials";
  if (url.hash !== "") return "must not contain a fragment";
  if (policy.allowPrivate) return undefined;

  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0) {
    return isPublicAddress(host) ? undefined : "must not point to a private, loopback or link-local address";
  }
  let addresses: string[];
  try {
    addresses = await (policy.resolve ?? resolveAll)(host);
  } catch {
    return `host ${host} could not be resolved`;
  }
  if (addresses.length === 0) return `host ${host} could not be resolved`;
  return addresses.every(isPublicAddress)
    ? undefined
    : "must not point to a private, loopback or link-local address";
}

/**
 * Where a webhook goes, as fair delivery counts it (docs/reactors.md#fairness): the URL's scheme, host and port,
 * the default port spelt out, so that `https://a.example/x` and `https://a.example:443/y` are one destination.
 */
export function destinationOf(callbackUrl: string): string {
  const url = new URL(callbackUrl);
  const port = url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80";
  return `${url.protocol}//${url.hostname}:${port}`;
}
