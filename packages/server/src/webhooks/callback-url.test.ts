import { describe, expect, it } from "vitest";
import { addressesOf, urlHost } from "../../test/special-ranges.js";
import { IPV4_SPECIAL_RANGES, IPV6_SPECIAL_RANGES } from "../net/special-ranges.js";
import { callbackUrlProblem } from "./callback-url.js";

const PRIVATE = "must not point to a private, loopback or link-local address";

/** Resolution stubbed per host, so the test needs no DNS: names map to the addresses a resolver would give. */
const resolve = (answers: Record<string, string[]>) => (host: string) =>
  answers[host] === undefined ? Promise.reject(new Error("ENOTFOUND")) : Promise.resolve(answers[host]);

describe("callbackUrlProblem", () => {
  const policy = {
    allowPrivate: false,
    resolve: resolve({
      "hooks.example.com": ["93.184.216.34"],
      "rebind.example.com": ["93.184.216.34", "127.0.0.1"],
      "metadata.example.com": ["169.254.169.254"],
      "v6.example.com": ["2606:4700::1"],
      "empty.example.com": [],
    }),
  };

  it.each([
    ["https://hooks.example.com/tessera", undefined],
    ["http://hooks.example.com:8080/x?y=1", undefined],
    ["https://v6.example.com/", undefined],
    ["https://93.184.216.34/", undefined],
    ["https://[2606:4700::1]/", undefined],
    ["not a url", "must be an absolute http or https URL"],
    ["/relative", "must be an absolute http or https URL"],
    ["ftp://hooks.example.com/", "must be an http or https URL"],
    ["file:///etc/passwd", "must be an http or https URL"],
    ["https://user:pw@hooks.example.com/", "must not contain credentials"],
    ["https://hooks.example.com/#frag", "must not contain a fragment"],
    ["http://127.0.0.1:3000/", PRIVATE],
    ["http://0x7f000001/", PRIVATE],
    ["http://2130706433/", PRIVATE],
    ["http://0177.0.0.1/", PRIVATE],
    ["http://169.254.169.254/latest/meta-data", PRIVATE],
    ["http://10.0.0.5/", PRIVATE],
    ["http://[::1]/", PRIVATE],
    ["http://[::ffff:127.0.0.1]/", PRIVATE],
    ["http://[fe80::1]/", PRIVATE],
    ["http://0.0.0.0/", PRIVATE],
    ["http://rebind.example.com/", PRIVATE],
    ["http://metadata.example.com/", PRIVATE],
    ["http://nowhere.example.com/", "host nowhere.example.com could not be resolved"],
    ["http://empty.example.com/", "host empty.example.com could not be resolved"],
  ])("%s → %s", async (url, expected) => {
    expect(await callbackUrlProblem(url, policy)).toBe(expected);
  });

  it("resolves localhost for real and refuses it", async () => {
    expect(await callbackUrlProblem("http://localhost:3000/", { allowPrivate: false })).toBe(PRIVATE);
  });

  it("refuses an address in every special-purpose range, and a name resolving to one, unless private targets are allowed", async () => {
    const open = { allowPrivate: true, resolve: () => Promise.reject(new Error("not called")) };
    for (const range of [...IPV4_SPECIAL_RANGES, ...IPV6_SPECIAL_RANGES]) {
      for (const address of Object.values(addressesOf(range)).filter((v) => typeof v === "string")) {
        const url = `http://${urlHost(address)}/hook`;
        expect(await callbackUrlProblem(url, policy), url).toBe(PRIVATE);
        const named = {
          allowPrivate: false,
          resolve: resolve({ "hooks.example.com": ["93.184.216.34", address] }),
        };
        expect(await callbackUrlProblem("https://hooks.example.com/", named), address).toBe(PRIVATE);
        expect(await callbackUrlProblem(url, open), url).toBeUndefined();
      }
    }
  });

  it("allows private targets when the operator does, but still only http(s)", async () => {
    const open = { allowPrivate: true, resolve: () => Promise.reject(new Error("not called")) };
    expect(await callbackUrlProblem("http://127.0.0.1:3000/", open)).toBeUndefined();
    expect(await callbackUrlProblem("http://localhost/", open)).toBeUndefined();
    expect(await callbackUrlProblem("gopher://127.0.0.1/", open)).toBe("must be an http or https URL");
  });
});
