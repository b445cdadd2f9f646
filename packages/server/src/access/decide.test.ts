import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ROOT,
  containerCovers,
  containerPaths,
  decide,
  effectiveRules,
  explain,
  mayWriteInto,
  widenedBy,
  type Grantee,
} from "./decide.js";
import { TOKEN_PERMISSIONS, type Permission } from "./permissions.js";
import { TRANSFORMS, type AccessRule } from "./rules.js";

const rule = (
  priority: number,
  container: string,
  transform: AccessRule["transform"],
  ...permissions: Permission[]
) => ({ priority, container, transform, permissions }) as AccessRule;

describe("containerCovers", () => {
  it.each([
    ["/pci/", "/pci/", true],
    ["/pci/", "/pci/high/", true],
    ["/pci/", "/pcix/", false],
    ["/pci/high/", "/pci/", false],
    ["/", "/anything/at/all/", true],
    ["/pci/high/", "/pci/higher/", false],
  ])("%s covers %s: %s", (rule, token, covers) => {
    expect(containerCovers(rule, token)).toBe(covers);
  });
});

describe("containerPaths", () => {
  it("lists every path above each container, the containers themselves marked, the root only as a container", () => {
    expect([...containerPaths(["/pci/high/", "/pci/"])]).toEqual([
      ["/pci/", true],
      ["/pci/high/", true],
    ]);
    expect([...containerPaths(["/a/b/c/"])]).toEqual([
      ["/a/", false],
      ["/a/b/", false],
      ["/a/b/c/", true],
    ]);
    expect([...containerPaths(["/"])]).toEqual([["/", true]]);
  });

  it("holds a rule's container exactly when the rule covers one of the containers (the search index relies on it)", () => {
    const path = fc
      .array(fc.constantFrom("pci", "pcix", "p", "high", "a.b", "x_y"), { maxLength: 4 })
      .map((segments) => `/${segments.map((s) => `${s}/`).join("")}`);
    fc.assert(
      fc.property(fc.array(path, { minLength: 1, maxLength: 3 }), path, (containers, ruleContainer) => {
        const paths = containerPaths(containers);
        const covered = containers.some((c) => containerCovers(ruleContainer, c));
        expect(ruleContainer === ROOT || paths.has(ruleContainer)).toBe(covered);
        for (const [p, exact] of paths) expect(exact).toBe(containers.includes(p));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("decide", () => {
  const backend: Grantee = {
    permissions: [],
    rules: [
      rule(3, "/", "redact", "token:read"),
      rule(1, "/pci/high/", "reveal", "token:read"),
      rule(2, "/pci/", "mask", "token:read", "token:search"),
    ],
  };

  it.each<[Permission, string[], string | undefined]>([
    ["token:read", ["/pci/high/"], "reveal"],
    ["token:read", ["/pci/high/deeper/"], "reveal"],
    ["token:read", ["/pci/low/"], "mask"],
    ["token:read", ["/pcix/"], "redact"],
    ["token:search", ["/pci/high/"], "mask"],
    ["token:search", ["/pii/"], undefined],
    ["token:use", ["/pci/high/"], undefined],
    ["token:read", ["/pii/", "/pci/high/"], "reveal"],
  ])("%s on %j → %s", (permission, containers, transform) => {
    expect(decide(backend, permission as never, containers)?.transform).toBe(transform);
  });

  it("passes over a covering rule that lacks the permission", () => {
    const grantee: Grantee = {
      permissions: [],
      rules: [rule(1, "/pci/", "reveal", "token:create"), rule(2, "/", "mask", "token:read")],
    };
    expect(decide(grantee, "token:read", ["/pci/"])).toMatchObject({
      transform: "mask",
      rule: { priority: 2 },
    });
  });

  it("gives top-level permissions implicit rules over every container, after the explicit ones", () => {
    const grantee: Grantee = {
      permissions: ["token:read", "token:use", "application:read"],
      rules: [rule(5, "/pci/", "redact", "token:read")],
    };
    expect(
      effectiveRules(grantee).map(({ rule: r, origin }) => [r.container, r.transform, r.permissions, origin]),
    ).toEqual([
      ["/pci/", "redact", ["token:read"], { kind: "rule", index: 0 }],
      ["/", "mask", ["token:read"], { kind: "permission", permission: "token:read" }],
      ["/", "reveal", ["token:use"], { kind: "permission", permission: "token:use" }],
    ]);
    expect(decide(grantee, "token:read", ["/pci/x/"])?.transform).toBe("redact");
    expect(decide(grantee, "token:read", ["/pii/"])?.transform).toBe("mask");
    expect(decide(grantee, "token:use", ["/pii/"])?.transform).toBe("reveal");
  });

  it("ignores rules without a container (session conditions)", () => {
    const grantee: Grantee = {
      permissions: [],
      rules: [
        {
          priority: 1,
          conditions: [{ attribute: "id", operator: "equals", value: "x" }],
          transform: "reveal",
          permissions: ["token:read"],
        },
      ],
    };
    expect(decide(grantee, "token:read", ["/"])).toBeUndefined();
  });

  it("requires a write permission on every container", () => {
    const grantee: Grantee = { permissions: [], rules: [rule(1, "/pci/", "mask", "token:create")] };
    expect(mayWriteInto(grantee, "token:create", ["/pci/a/", "/pci/b/"])).toBe(true);
    expect(mayWriteInto(grantee, "token:create", ["/pci/a/", "/pii/"])).toBe(false);
    expect(mayWriteInto(grantee, "token:update", ["/pci/a/"])).toBe(false);
  });

  const segment = fc.constantFrom("pci", "pcix", "pii", "high", "low", "a");
  const container = fc
    .array(segment, { maxLength: 3 })
    .map((parts) => `/${parts.map((p) => `${p}/`).join("")}`);
  const anyRule = fc.record({
    priority: fc.integer({ min: 1, max: 50 }),
    container,
    transform: fc.constantFrom(...TRANSFORMS),
    permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }),
  });
  const grantee = fc.record({
    permissions: fc.subarray<Permission>([...TOKEN_PERMISSIONS]),
    rules: fc.uniqueArray(anyRule, { selector: (r) => r.priority, maxLength: 6 }),
  });

  it("agrees with a brute-force reading of the precedence rules", () => {
    fc.assert(
      fc.property(
        grantee,
        fc.constantFrom(...TOKEN_PERMISSIONS),
        fc.array(container, { minLength: 1, maxLength: 3 }),
        (g, p, cs) => {
          const candidates = [
            ...g.rules.map((r) => ({ r, rank: r.priority })),
            ...g.permissions.map((perm, i) => ({
              r: rule(0, "/", perm === "token:use" ? "reveal" : "mask", perm),
              rank: 1000 + i,
            })),
          ]
            .filter(({ r }) => r.permissions.includes(p) && cs.some((c) => c.startsWith(r.container!)))
            .sort((a, b) => a.rank - b.rank);
          expect(decide(g, p, cs)?.transform).toBe(candidates[0]?.r.transform);
        },
      ),
    );
  });

  it("never grants access through a rule for a sibling container with a shared prefix", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,6}$/), fc.stringMatching(/^[a-z]{1,6}$/), (a, suffix) => {
        const g: Grantee = { permissions: [], rules: [rule(1, `/${a}/`, "reveal", "token:read")] };
        expect(decide(g, "token:read", [`/${a}${suffix}/`])).toBeUndefined();
      }),
    );
  });
});

describe("widenedBy", () => {
  const grantee: Grantee = {
    permissions: [],
    rules: [
      rule(1, "/a/open/", "reveal", "token:read", "token:update"),
      rule(2, "/a/use/", "mask", "token:read", "token:use"),
      rule(3, "/a/find/", "redact", "token:search"),
      rule(4, "/a/", "mask", "token:read", "token:update"),
      rule(5, "/b/", "redact", "token:read", "token:update"),
    ],
  };

  it.each<[string[], string[], string[]]>([
    [["/a/x/"], ["/a/y/"], []],
    [["/a/x/"], ["/a/open/"], ["token:read"]],
    [["/a/x/"], ["/a/use/"], ["token:use"]],
    [["/a/x/"], ["/a/find/"], ["token:search"]],
    [["/b/"], ["/a/x/"], ["token:read"]],
    [["/a/x/"], ["/b/"], []],
    [["/a/open/"], ["/a/x/"], []],
    // Several containers: the first covering rule decides, before and after.
    [["/b/", "/a/x/"], ["/a/x/"], []],
    [["/elsewhere/"], ["/b/"], []],
    [["/elsewhere/"], ["/a/x/"], ["token:read"]],
  ])("moving %j to %j shows more through %j", (from, to, widened) => {
    expect(widenedBy(grantee, from, to)).toEqual(widened);
  });

  it("is never widened both ways, nor by staying put", () => {
    const containers = fc.array(fc.constantFrom("/a/x/", "/a/open/", "/a/use/", "/a/find/", "/b/", "/c/"), {
      minLength: 1,
      maxLength: 3,
    });
    fc.assert(
      fc.property(containers, containers, (from, to) => {
        expect(widenedBy(grantee, from, from)).toEqual([]);
        const there = widenedBy(grantee, from, to);
        const back = widenedBy(grantee, to, from);
        expect(there.filter((permission) => back.includes(permission))).toEqual([]);
      }),
    );
  });
});

describe("explain", () => {
  const backend: Grantee = {
    permissions: ["token:search"],
    rules: [
      rule(30, "/", "redact", "token:read"),
      rule(10, "/pci/high/", "reveal", "token:read"),
      rule(20, "/pci/", "mask", "token:search", "token:use"),
    ],
  };

  it("names the deciding rule by its index as stored and each rule tried before it with the reason", () => {
    expect(explain(backend, "token:read", ["/pci/low/"])).toEqual({
      decision: { transform: "redact", rule: backend.rules[0], origin: { kind: "rule", index: 0 } },
      passedOver: [
        { ranked: { rule: backend.rules[1], origin: { kind: "rule", index: 1 } }, reason: "container" },
        { ranked: { rule: backend.rules[2], origin: { kind: "rule", index: 2 } }, reason: "permission" },
      ],
    });
  });

  it("falls through to a top-level permission's implicit rule, and tries every rule when none decides", () => {
    const search = explain(backend, "token:search", ["/pii/"]);
    expect(search.decision).toMatchObject({
      transform: "mask",
      origin: { kind: "permission", permission: "token:search" },
    });
    expect(search.passedOver.map((p) => p.reason)).toEqual(["permission", "container", "permission"]);

    const use = explain(backend, "token:use", ["/pii/"]);
    expect(use.decision).toBeUndefined();
    expect(use.passedOver.map((p) => [p.ranked.origin, p.reason])).toEqual([
      [{ kind: "rule", index: 1 }, "permission"],
      [{ kind: "rule", index: 2 }, "container"],
      [{ kind: "rule", index: 0 }, "permission"],
      [{ kind: "permission", permission: "token:search" }, "permission"],
    ]);
  });

  it("passes over a rule with conditions instead of a container (they apply to session keys only)", () => {
    const grantee: Grantee = {
      permissions: [],
      rules: [
        {
          priority: 1,
          conditions: [{ attribute: "container", operator: "starts_with", value: "/pci/" }],
          transform: "reveal",
          permissions: ["token:read"],
        },
        rule(2, "/", "mask", "token:read"),
      ],
    };
    const result = explain(grantee, "token:read", ["/pci/"]);
    expect(result.passedOver.map((p) => p.reason)).toEqual(["conditions"]);
    expect(result.decision?.origin).toEqual({ kind: "rule", index: 1 });
  });

  const segment = fc.constantFrom("pci", "pcix", "pii", "high", "a");
  const container = fc
    .array(segment, { maxLength: 3 })
    .map((parts) => `/${parts.map((p) => `${p}/`).join("")}`);
  const grantee = fc.record({
    permissions: fc.subarray<Permission>([...TOKEN_PERMISSIONS]),
    rules: fc.uniqueArray(
      fc.record({
        priority: fc.integer({ min: 1, max: 50 }),
        container,
        transform: fc.constantFrom(...TRANSFORMS),
        permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }),
      }),
      { selector: (r) => r.priority, maxLength: 6 },
    ),
  });

  it("agrees with decide, and its trace is every rule before the decider in precedence order, each for a true reason", () => {
    fc.assert(
      fc.property(
        grantee,
        fc.constantFrom(...TOKEN_PERMISSIONS),
        fc.array(container, { minLength: 1, maxLength: 3 }),
        (g: Grantee, p, cs) => {
          const { decision, passedOver } = explain(g, p, cs);
          expect(decision).toEqual(decide(g, p, cs));
          const ordered = effectiveRules(g);
          const decidedAt =
            decision === undefined
              ? ordered.length
              : ordered.findIndex((r) => isDeepStrictEqual(r.origin, decision.origin));
          expect(passedOver.map((step) => step.ranked)).toEqual(ordered.slice(0, decidedAt));
          for (const { ranked, reason } of passedOver) {
            const holds = ranked.rule.permissions.includes(p);
            const covers = cs.some((c) => c.startsWith(ranked.rule.container!));
            expect(reason).toBe(holds ? "container" : "permission");
            if (reason === "container") expect(covers).toBe(false);
          }
          if (decision !== undefined) {
            const origin = decision.origin;
            const stated = origin.kind === "rule" ? g.rules[origin.index] : undefined;
            if (origin.kind === "rule") expect(decision.rule).toBe(stated);
            else expect(g.permissions).toContain(origin.permission);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
