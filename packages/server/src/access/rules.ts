import { isAllowedFor, isTokenPermission, type ApplicationType, type Permission } from "./permissions.js";

export const TRANSFORMS = ["redact", "mask", "reveal"] as const;
export type Transform = (typeof TRANSFORMS)[number];

export const CONDITION_ATTRIBUTES = ["id", "container"] as const;
export const CONDITION_OPERATORS = ["starts_with", "equals"] as const;

export interface Condition {
  readonly attribute: (typeof CONDITION_ATTRIBUTES)[number];
  readonly operator: (typeof CONDITION_OPERATORS)[number];
  readonly value: string;
}

export interface AccessRule {
  readonly description?: string;
  readonly priority: number;
  readonly container?: string;
  readonly conditions?: readonly Condition[];
  readonly transform: Transform;
  readonly permissions: readonly Permission[];
}

export type FieldErrors = Record<string, string[]>;

const CONTAINER = /^\/(?:[a-z0-9_.-]+\/)*$/;
export const MAX_CONTAINER_LENGTH = 400;

/** Containers are paths like `/pci/high/`; they compare case-insensitively, so they are kept lower-case. */
export function normalizeContainer(container: string): string {
  return container.toLowerCase();
}

/**
 * A segment that is exactly `.` or `..` (RFC 3986 dot segments). Rules match containers as plain prefixes, so
 * `/pci/../pii/` lies under `/pci/`, while anything that resolves paths (a proxy, a console, a report) reads it as
 * `/pii/`: the same token would be in two places depending on who looks.
 */
const DOT_SEGMENT = /\/\.{1,2}(?=\/)/;
export const DOT_SEGMENT_PROBLEM = "must not have . or .. as a segment";

export function containerProblem(container: string): string | undefined {
  if (container.length > MAX_CONTAINER_LENGTH) return `must be at most ${MAX_CONTAINER_LENGTH} characters`;
  if (!CONTAINER.test(normalizeContainer(container))) {
    return "must be a path with a leading and a trailing slash, like /pci/high/ (letters, digits, . _ -)";
  }
  if (DOT_SEGMENT.test(container)) return DOT_SEGMENT_PROBLEM;
  return undefined;
}

export interface GrantInput {
  readonly type: ApplicationType;
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
}

/**
 * Checks what a JSON schema cannot express about an Application's permissions and rules (spec §2.3–2.4,
 * DESIGN §6). Returns every problem, keyed by the field path a client sent.
 */
export function validateGrant({ type, permissions, rules }: GrantInput): FieldErrors {
  const errors: FieldErrors = {};
  // Field names here are fixed paths (permissions[0], rules[1].priority), never names a client chose.
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);

  if (permissions.length === 0 && rules.length === 0)
    add("permissions", "permissions or rules must be non-empty");
  permissions.forEach((permission, i) => {
    if (!isAllowedFor(type, permission)) add(`permissions[${i}]`, notAllowed(permission, type));
  });

  if (type === "management" && rules.length > 0) {
    add("rules", "management Applications cannot have access rules");
    return errors;
  }

  const seenPriorities = new Set<number>();
  rules.forEach((rule, i) => {
    const at = `rules[${i}]`;
    if (seenPriorities.has(rule.priority))
      add(`${at}.priority`, `priority ${rule.priority} is used by another rule`);
    seenPriorities.add(rule.priority);

    if (rule.container !== undefined && rule.conditions !== undefined) {
      add(`${at}.conditions`, "container and conditions are mutually exclusive");
    } else if (rule.container === undefined) {
      add(`${at}.container`, `is required for ${type} Applications`);
    }
    if (rule.container !== undefined) {
      const problem = containerProblem(rule.container);
      if (problem !== undefined) add(`${at}.container`, problem);
    }

    if (rule.permissions.length === 0) add(`${at}.permissions`, "must hold at least one permission");
    rule.permissions.forEach((permission, j) => {
      if (!isTokenPermission(permission)) {
        add(
          `${at}.permissions[${j}]`,
          `${permission} cannot be granted by an access rule (token permissions only)`,
        );
      } else if (!isAllowedFor(type, permission)) {
        add(`${at}.permissions[${j}]`, notAllowed(permission, type));
      }
    });
  });
  return errors;
}

function notAllowed(permission: Permission, type: ApplicationType): string {
  return `${permission} is not allowed for ${type} Applications`;
}

/**
 * What a session may be authorized with (wire-format §6): token permissions a private Application may hold, and
 * rules scoped by `conditions`, never by `container` (spec §2.4: conditions are for sessions). Whether the
 * authorizer holds them itself is the service's check. Returns every problem, keyed by the field path sent.
 */
export function validateSessionGrant({ permissions, rules }: Omit<GrantInput, "type">): FieldErrors {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  if (permissions.length === 0 && rules.length === 0)
    add("permissions", "permissions or rules must be non-empty");
  permissions.forEach((permission, i) => {
    if (!isAllowedFor("private", permission)) add(`permissions[${i}]`, sessionNotAllowed(permission));
  });
  const seenPriorities = new Set<number>();
  rules.forEach((rule, i) => {
    const at = `rules[${i}]`;
    if (seenPriorities.has(rule.priority))
      add(`${at}.priority`, `priority ${rule.priority} is used by another rule`);
    seenPriorities.add(rule.priority);
    if (rule.container !== undefined) {
      add(`${at}.container`, "a session's rules are scoped by conditions, not by a container");
    }
    if (rule.conditions === undefined || rule.conditions.length === 0) {
      add(`${at}.conditions`, "must hold at least one condition");
    }
    rule.conditions?.forEach((condition, j) => {
      const field = `${at}.conditions[${j}].value`;
      if (condition.attribute === "container") {
        const problem = containerProblem(condition.value);
        if (problem !== undefined) add(field, problem);
      } else if (condition.value.length === 0) {
        add(field, "must not be empty");
      }
    });
    if (rule.permissions.length === 0) add(`${at}.permissions`, "must hold at least one permission");
    rule.permissions.forEach((permission, j) => {
      if (!isAllowedFor("private", permission)) {
        add(`${at}.permissions[${j}]`, sessionNotAllowed(permission));
      }
    });
  });
  return errors;
}

function sessionNotAllowed(permission: Permission): string {
  return `${permission} cannot be granted to a session (token permissions of private Applications only)`;
}

/**
 * The stored form: containers (of rules and of container conditions) lower-cased, duplicate permissions dropped,
 * rules in precedence order.
 */
export function normalizeRules(rules: readonly AccessRule[]): AccessRule[] {
  return [...rules]
    .sort((a, b) => a.priority - b.priority)
    .map((rule) => ({
      ...(rule.description !== undefined && { description: rule.description }),
      priority: rule.priority,
      ...(rule.container !== undefined && { container: normalizeContainer(rule.container) }),
      ...(rule.conditions !== undefined && {
        conditions: rule.conditions.map((c) =>
          c.attribute === "container" ? { ...c, value: normalizeContainer(c.value) } : { ...c },
        ),
      }),
      transform: rule.transform,
      permissions: [...new Set(rule.permissions)],
    }));
}
