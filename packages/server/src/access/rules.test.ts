import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  APPLICATION_TYPES,
  PERMISSIONS,
  holdsPermission,
  isAllowedFor,
  type Permission,
} from "./permissions.js";
import { TRANSFORMS, containerProblem, normalizeRules, validateGrant, type AccessRule } from "./rules.js";

// `.` and `..` alone are dot segments, which are refused (below).
const segment = fc.stringMatching(/^[a-z0-9_.-]{1,12}$/).filter((s) => s !== "." && s !== "..");
const container = fc
  .array(segment, { maxLength: 5 })
  .map((parts) => `/${parts.map((p) => `${p}/`).join("")}`);
const permission = fc.constantFrom(...PERMISSIONS);
const type = fc.constantFrom(...APPLICATION_TYPES);

describe("permissions by Application type (DESIGN §6)", () => {
  it.each<[Permission, string[]]>([
    ["token:create", ["private", "public"]],
    ["token:update", ["private", "public"]],
    ["token:read", ["private"]],
    ["token:search", ["private"]],
    ["token:delete", ["private"]],
    ["token:use", ["private"]],
    ["application:create", ["management"]],
    ["reactor:update", ["management"]],
    ["tenant:create", ["management"]],
    ["log:read", ["management"]],
  ])("%s is allowed for %j", (p, types) => {
    expect(APPLICATION_TYPES.filter((t) => isAllowedFor(t, p))).toEqual(types);
  });

  it("holds a permission granted directly or by any rule, and nothing else", () => {
    fc.assert(
      fc.property(
        fc.array(permission),
        fc.array(fc.array(permission)),
        permission,
        (direct, rules, wanted) => {
          const grant = { permissions: direct, rules: rules.map((permissions) => ({ permissions })) };
          expect(holdsPermission(grant, wanted)).toBe(
            direct.includes(wanted) || rules.some((r) => r.includes(wanted)),
          );
        },
      ),
    );
  });
});

describe("containers", () => {
  it("accepts every well-formed path, in any case", () => {
    fc.assert(
      fc.property(container, fc.boolean(), (c, upper) => {
        expect(containerProblem(upper ? c.toUpperCase() : c)).toBeUndefined();
      }),
    );
  });

  it.each(["", "pci", "/pci", "pci/", "//", "/a//b/", "/a b/", "/a/*", "/ä/"])("rejects %j", (c) => {
    expect(containerProblem(c)).toBeDefined();
  });

  it.each(["/pci/../pii/", "/pci/./", "/../", "/./", "/../pci/", "/pci/..", "/PCI/../"])(
    "rejects the dot segments of %j",
    (c) => {
      expect(containerProblem(c)).toMatch(/^must (not have \. or \.\. as a segment|be a path)/);
    },
  );

  it.each(["/.../", "/.hidden/", "/a./", "/..a/", "/v1.2/"])("accepts %j, which has no dot segment", (c) => {
    expect(containerProblem(c)).toBeUndefined();
  });
});

describe("validateGrant", () => {
  const rule = (overrides: Partial<AccessRule> = {}): AccessRule => ({
    priority: 1,
    container: "/pci/",
    transform: "mask",
    permissions: ["token:read"],
    ...overrides,
  });

  it("accepts any grant made only of permissions allowed for the type with well-formed unique rules", () => {
    const grant = type.chain((t) =>
      fc.record({
        type: fc.constant(t),
        permissions: fc.array(fc.constantFrom(...PERMISSIONS.filter((p) => isAllowedFor(t, p)))),
        rules:
          t === "management"
            ? fc.constant([])
            : fc.uniqueArray(
                fc.record({
                  priority: fc.integer({ min: 1, max: 1000 }),
                  container,
                  transform: fc.constantFrom(...TRANSFORMS),
                  permissions: fc.array(
                    fc.constantFrom(
                      ...PERMISSIONS.filter((p) => p.startsWith("token:") && isAllowedFor(t, p)),
                    ),
                    { minLength: 1 },
                  ),
                }),
                { selector: (r) => r.priority },
              ),
      }),
    );
    fc.assert(
      fc.property(
        grant.filter((g) => g.permissions.length + g.rules.length > 0),
        (g) => {
          expect(validateGrant(g)).toEqual({});
        },
      ),
    );
  });

  it("finds a disallowed permission wherever it is placed", () => {
    fc.assert(
      fc.property(type, fc.array(permission, { minLength: 1 }), (t, permissions) => {
        const errors = validateGrant({ type: t, permissions, rules: [] });
        permissions.forEach((p, i) => {
          expect(errors[`permissions[${i}]`] !== undefined).toBe(!isAllowedFor(t, p));
        });
      }),
    );
  });

  it.each<[string, Parameters<typeof validateGrant>[0], Record<string, string[]>]>([
    [
      "nothing granted",
      { type: "private", permissions: [], rules: [] },
      { permissions: ["permissions or rules must be non-empty"] },
    ],
    [
      "rules on management",
      { type: "management", permissions: ["application:read"], rules: [rule()] },
      { rules: ["management Applications cannot have access rules"] },
    ],
    [
      "duplicate priorities",
      { type: "private", permissions: [], rules: [rule(), rule({ container: "/pii/" })] },
      { "rules[1].priority": ["priority 1 is used by another rule"] },
    ],
    [
      "no container on a public rule",
      {
        type: "public",
        permissions: [],
        rules: [rule({ container: undefined, permissions: ["token:create"] })],
      },
      { "rules[0].container": ["is required for public Applications"] },
    ],
    [
      "container with conditions",
      {
        type: "private",
        permissions: [],
        rules: [rule({ conditions: [{ attribute: "id", operator: "equals", value: "x" }] })],
      },
      { "rules[0].conditions": ["container and conditions are mutually exclusive"] },
    ],
    [
      "empty rule permissions",
      { type: "private", permissions: [], rules: [rule({ permissions: [] })] },
      { "rules[0].permissions": ["must hold at least one permission"] },
    ],
  ])("reports %s", (_name, grant, errors) => {
    expect(validateGrant(grant)).toEqual(errors);
  });
});

describe("normalizeRules", () => {
  it("orders by priority, lower-cases containers and drops duplicate permissions", () => {
    expect(
      normalizeRules([
        {
          priority: 5,
          container: "/PII/High/",
          transform: "reveal",
          permissions: ["token:read", "token:read"],
        },
        {
          description: "first",
          priority: 2,
          container: "/pci/",
          transform: "mask",
          permissions: ["token:use"],
        },
      ]),
    ).toEqual([
      {
        description: "first",
        priority: 2,
        container: "/pci/",
        transform: "mask",
        permissions: ["token:use"],
      },
      { priority: 5, container: "/pii/high/", transform: "reveal", permissions: ["token:read"] },
    ]);
  });
});
