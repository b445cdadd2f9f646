import { randomUUID } from "node:crypto";
import {
  holdsPermission,
  isTokenPermission,
  type ApplicationType,
  type Permission,
} from "../access/permissions.js";
import { normalizeRules, validateGrant, type AccessRule } from "../access/rules.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Clock } from "../shared/clock.js";
import { generateApiKey, hashApiKey } from "../crypto/api-keys.js";
import { AppError, type FieldErrors } from "../server/errors.js";
import { parseTimestamp, textProblem } from "../shared/text.js";
import { offsetOf, pageOf, type Page, type PageRequest } from "../shared/pages.js";
import { type Executor, type ReadContext, type Reads, writeContext } from "../storage/database.js";
import { applicationStore } from "./store.js";
import type { Application, Principal } from "../access/principal.js";

export interface ApplicationInput {
  readonly name: string;
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
}

export interface CreateApplicationInput extends ApplicationInput {
  readonly type: ApplicationType;
  readonly expiresAt?: string;
}

export interface IssuedApplication {
  readonly application: Application;
  /** The plaintext key: returned once, never stored. */
  readonly key: string;
}

export interface ApplicationServiceDeps {
  readonly db: Executor;
  /** The store's hot-path readers (authentication); Kysely on `db` when absent. */
  readonly reads?: Reads;
  readonly clock: Clock;
  readonly audit: AuditRecorder;
}

/** What the log keeps of a grant: who may do what where, which is what a review of access asks. */
function grantDetails(application: Pick<Application, "type" | "permissions" | "rules">) {
  return {
    type: application.type,
    permissions: application.permissions,
    rules: application.rules.map((r) => ({
      container: r.container,
      priority: r.priority,
      transform: r.transform,
      permissions: r.permissions,
    })),
  };
}

export function createApplicationService({ db, reads, clock, audit }: ApplicationServiceDeps) {
  const store = applicationStore(db, reads);

  /**
   * Another tenant's id reads exactly like a missing one (DESIGN §5.4), and so does an expired Application: its key
   * is refused from the moment it expires, and the API shows it no longer, whether the sweeper has run or not.
   */
  async function findVisible(principal: Principal, id: string): Promise<Application> {
    const application = await store.findById(principal.tenantId, id);
    if (application === undefined || isExpired(application, clock.now())) {
      throw AppError.notFound(`Application ${id}`);
    }
    return application;
  }

  return {
    /** Resolves an API key to its Application; an expired one is rejected before any sweeper removes it. */
    async authenticate(key: string): Promise<{ principal: Principal; read: ReadContext } | undefined> {
      const versions = store.versions();
      const application = await store.findByKeyHash(hashApiKey(key), versions?.config);
      if (application === undefined || isExpired(application, clock.now())) return undefined;
      return {
        principal: { tenantId: application.tenantId, application },
        read: versions === undefined ? {} : { versions },
      };
    },

    /** An Application as it is now, as a principal: for credentials the server issues itself (reactors' svc). */
    async principalById(tenantId: string, id: string): Promise<Principal | undefined> {
      const application = await store.findById(tenantId, id);
      if (application === undefined || isExpired(application, clock.now())) return undefined;
      return { tenantId, application };
    },

    async create(principal: Principal, input: CreateApplicationInput): Promise<IssuedApplication> {
      const now = clock.now();
      const parsed = input.expiresAt === undefined ? undefined : parseTimestamp(input.expiresAt);
      const expiresAt = parsed !== undefined && "iso" in parsed ? parsed.iso : null;
      const checked = checkedInput(input.type, input, {
        ...(parsed !== undefined && "problem" in parsed && { expires_at: [parsed.problem] }),
        ...(expiresAt !== null &&
          expiresAt <= now.toISOString() && { expires_at: ["must be in the future"] }),
      });
      assertMayGrant(principal, checked.permissions);
      return db.transaction().execute(async (trx) => {
        const issued = await insertApplication(trx, {
          tenantId: principal.tenantId,
          createdBy: principal.application.id,
          createdAt: now,
          expiresAt,
          type: input.type,
          ...checked,
        });
        const { application } = issued;
        await audit.within(writeContext(trx), [
          auditEntry(
            principal,
            "application.create",
            { type: "application", id: application.id },
            { details: grantDetails(application) },
          ),
        ]);
        return issued;
      });
    },

    async list(
      principal: Principal,
      filter: { ids: readonly string[] },
      page: PageRequest,
    ): Promise<Page<Application>> {
      const { items, total } = await store.list(principal.tenantId, {
        ids: filter.ids,
        now: clock.now().toISOString(),
        offset: offsetOf(page),
        limit: page.size,
      });
      return pageOf(items, total, page);
    },

    get: findVisible,

    async update(principal: Principal, id: string, input: ApplicationInput): Promise<Application> {
      const current = await findVisible(principal, id);
      const checked = checkedInput(current.type, input);
      assertMayGrant(principal, checked.permissions);
      const modifiedAt = clock.now().toISOString();
      const changes = { ...checked, modifiedBy: principal.application.id, modifiedAt };
      await db.transaction().execute(async (trx) => {
        if (!(await applicationStore(trx).update(principal.tenantId, id, changes))) {
          throw AppError.notFound(`Application ${id}`);
        }
        await audit.within(writeContext(trx), [
          auditEntry(
            principal,
            "application.update",
            { type: "application", id },
            { details: grantDetails({ type: current.type, ...checked }) },
          ),
        ]);
      });
      return { ...current, ...checked, modifiedBy: changes.modifiedBy, modifiedAt };
    },

    /** The old key stops working when this commits: authentication looks up the hash on every request. */
    async regenerateKey(principal: Principal, id: string): Promise<IssuedApplication> {
      const current = await findVisible(principal, id);
      const key = generateApiKey(current.type);
      const modified = { by: principal.application.id, at: clock.now().toISOString() };
      await db.transaction().execute(async (trx) => {
        if (
          !(await applicationStore(trx).replaceKeyHash(principal.tenantId, id, hashApiKey(key), modified))
        ) {
          throw AppError.notFound(`Application ${id}`);
        }
        await audit.within(writeContext(trx), [
          auditEntry(principal, "application.regenerate_key", { type: "application", id }),
        ]);
      });
      return { application: { ...current, modifiedBy: modified.by, modifiedAt: modified.at }, key };
    },

    async delete(principal: Principal, id: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        if (!(await applicationStore(trx).delete(principal.tenantId, id, clock.now().toISOString()))) {
          throw AppError.notFound(`Application ${id}`);
        }
        await audit.within(writeContext(trx), [
          auditEntry(principal, "application.delete", { type: "application", id }),
        ]);
      });
    },

    /** Removes every Application whose `expires_at` has passed (spec §3). */
    sweepExpired(): Promise<number> {
      return store.deleteExpired(clock.now().toISOString());
    },
  };
}

export type ApplicationService = ReturnType<typeof createApplicationService>;

export interface NewApplication extends ApplicationInput {
  readonly tenantId: string;
  readonly type: ApplicationType;
  readonly createdBy: string | null;
  readonly createdAt: Date;
  readonly expiresAt: string | null;
  /** A caller-chosen key (the bootstrap key); otherwise one is generated. */
  readonly key?: string;
}

/** Creates an Application and its key; shared by the API, tenant creation and bootstrap. */
export async function insertApplication(db: Executor, input: NewApplication): Promise<IssuedApplication> {
  const key = input.key ?? generateApiKey(input.type);
  const application: Application = {
    id: randomUUID(),
    tenantId: input.tenantId,
    name: input.name,
    type: input.type,
    permissions: input.permissions,
    rules: input.rules,
    createdBy: input.createdBy,
    createdAt: input.createdAt.toISOString(),
    modifiedBy: null,
    modifiedAt: null,
    expiresAt: input.expiresAt,
  };
  await applicationStore(db).insert(application, hashApiKey(key));
  return { application, key };
}

/**
 * What other features do with Applications inside their own transaction (`db`), through this service's rules
 * and never its store: tenants create and reissue their administrator, reactors check the Application they run
 * as.
 */
export function applicationsIn(db: Executor) {
  const store = applicationStore(db);
  return {
    find: (tenantId: string, id: string) => store.findById(tenantId, id),
    insert: (input: NewApplication) => insertApplication(db, input),
    /** `existing` made a management Application with `permissions` and no rules again, under a new key. */
    async reissue(existing: Application, permissions: readonly Permission[], key: string, at: string) {
      const modified = { by: existing.id, at };
      await store.update(existing.tenantId, existing.id, {
        name: existing.name,
        permissions,
        rules: [],
        modifiedBy: modified.by,
        modifiedAt: modified.at,
      });
      await store.replaceKeyHash(existing.tenantId, existing.id, hashApiKey(key), modified);
    },
  };
}

/** Every problem at once: the grant's, the name's, and any the caller found (`otherErrors`). */
function checkedInput(
  type: ApplicationType,
  input: ApplicationInput,
  otherErrors: FieldErrors = {},
): ApplicationInput {
  const name = input.name.trim();
  const errors = {
    ...validateGrant({ type, permissions: input.permissions, rules: input.rules }),
    ...otherErrors,
  };
  const nameProblem = textProblem(name);
  if (nameProblem !== undefined) errors.name = [nameProblem];
  if (Object.keys(errors).length > 0) throw AppError.validation(errors);
  return { name, permissions: [...new Set(input.permissions)], rules: normalizeRules(input.rules) };
}

/**
 * No escalation: a caller may hand out a management permission only if it holds it itself, so that, for
 * example, a tenant's administrator cannot mint a key that creates tenants. Token permissions are granted by
 * management keys that by design never hold them.
 */
function assertMayGrant(principal: Principal, permissions: readonly Permission[]): void {
  const missing = permissions.filter(
    (p) => !isTokenPermission(p) && !holdsPermission(principal.application, p),
  );
  if (missing.length > 0) {
    throw AppError.forbidden(
      `The calling Application cannot grant permissions it does not hold: ${missing.join(", ")}`,
    );
  }
}

function isExpired(application: Application, now: Date): boolean {
  return application.expiresAt !== null && application.expiresAt <= now.toISOString();
}
