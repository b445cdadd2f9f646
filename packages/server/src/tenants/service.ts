import { randomUUID } from "node:crypto";
import { managementPermissions } from "../access/permissions.js";
import { insertApplication, type IssuedApplication } from "../applications/service.js";
import { applicationStore } from "../applications/store.js";
import type { Principal } from "../applications/types.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Clock } from "../clock.js";
import { generateApiKey, hashApiKey } from "../crypto/api-keys.js";
import type { Keyring, WrappedTenantKey } from "../crypto/keyring.js";
import { AppError, textProblem } from "../server/errors.js";
import type { Executor, Store } from "../storage/database.js";
import { tenantStore } from "./store.js";
import type { Tenant } from "./types.js";

const BOOTSTRAP_TENANT = "bootstrap_tenant_id";
const BOOTSTRAP_APPLICATION = "bootstrap_application_id";

export interface TenantServiceDeps {
  readonly store: Store;
  readonly keyring: Keyring;
  readonly clock: Clock;
  /** Absent where nothing is recorded (tests of the key machinery). */
  readonly audit?: AuditRecorder;
}

export interface CreatedTenant extends IssuedApplication {
  readonly tenant: Tenant;
}

interface PreparedTenant {
  readonly tenant: Tenant;
  readonly keys: WrappedTenantKey[];
}

export class StoreNotInitializedError extends Error {
  constructor() {
    super("the store has no bootstrap tenant yet: run `tessera init` or `tessera serve` first");
    this.name = "StoreNotInitializedError";
  }
}

export function createTenantService({ store, keyring, clock, audit }: TenantServiceDeps) {
  /** What Tessera itself does (first start, key recovery) is in the tenant's log too, with no actor. */
  const bySystem = (
    tenantId: string,
    action: "tenant.create" | "application.regenerate_key",
    id: string,
  ) => ({
    tenantId,
    actorId: null,
    action,
    entityType: action === "tenant.create" ? ("tenant" as const) : ("application" as const),
    entityId: id,
  });

  /**
   * A new tenant and its keys, wrapped before any transaction opens: the master key may be an HSM or a KMS, and a
   * write transaction (SQLite's one writer) does not wait on it.
   */
  async function prepareTenant(name: string, createdBy: string | null): Promise<PreparedTenant> {
    const tenant: Tenant = { id: randomUUID(), name, createdBy, createdAt: clock.now().toISOString() };
    return { tenant, keys: await keyring.newTenantKeys(tenant.id) };
  }

  /** Called inside a transaction: a tenant never exists without its keys and its first management Application. */
  async function insertTenant(
    trx: Executor,
    { tenant, keys }: PreparedTenant,
    options: { includeTenantCreate: boolean; key?: string },
  ): Promise<CreatedTenant> {
    await tenantStore(trx).insert(tenant, keys);
    const issued = await insertApplication(trx, {
      tenantId: tenant.id,
      name: `${tenant.name} administrator`.slice(0, 200),
      type: "management",
      permissions: managementPermissions({ includeTenantCreate: options.includeTenantCreate }),
      rules: [],
      createdBy: tenant.createdBy,
      createdAt: new Date(tenant.createdAt),
      expiresAt: null,
      ...(options.key !== undefined && { key: options.key }),
    });
    return { tenant, ...issued };
  }

  return {
    /** A new tenant's administrator gets every management permission except creating further tenants. */
    async create(principal: Principal, input: { name: string }): Promise<CreatedTenant> {
      const name = input.name.trim();
      const problem = textProblem(name);
      if (problem !== undefined) throw AppError.validation({ name: [problem] });
      const prepared = await prepareTenant(name, principal.application.id);
      return store.transaction(async (trx) => {
        const created = await insertTenant(trx, prepared, { includeTenantCreate: false });
        await audit?.within(trx, [
          auditEntry(principal, "tenant.create", { type: "tenant", id: created.tenant.id }),
          {
            ...bySystem(created.tenant.id, "tenant.create", created.tenant.id),
            actorId: principal.application.id,
          },
        ]);
        return created;
      });
    },

    async getOwn(principal: Principal): Promise<Tenant> {
      const tenant = await tenantStore(store.db).findById(principal.tenantId);
      if (tenant === undefined) throw AppError.notFound("Tenant");
      return tenant;
    },

    /**
     * First start only: creates the bootstrap tenant and its management Application (DESIGN §3). Serialized by
     * an advisory lock so that instances starting together on one PostgreSQL create it once.
     */
    async bootstrap(options: { key?: string }): Promise<CreatedTenant | undefined> {
      // Every start comes here: the keys are wrapped (a KMS call each) only when there is no tenant yet.
      if (await tenantStore(store.db).exists()) return undefined;
      const prepared = await prepareTenant("default", null);
      return store.transaction(
        async (trx) => {
          if (await tenantStore(trx).exists()) return undefined;
          const created = await insertTenant(trx, prepared, { includeTenantCreate: true, ...options });
          await tenantStore(trx).setMeta(BOOTSTRAP_TENANT, created.tenant.id);
          await tenantStore(trx).setMeta(BOOTSTRAP_APPLICATION, created.application.id);
          await audit?.within(trx, [bySystem(created.tenant.id, "tenant.create", created.tenant.id)]);
          return created;
        },
        { lock: "tessera:bootstrap" },
      );
    },

    /**
     * For an operator locked out (key lost, bootstrap Application deleted or stripped of its permissions):
     * a new key, printed once, on a bootstrap Application that again holds every management permission.
     */
    async recoverBootstrapKey(): Promise<string> {
      return store.transaction(
        async (trx) => {
          const meta = tenantStore(trx);
          const tenantId = await meta.getMeta(BOOTSTRAP_TENANT);
          if (tenantId === undefined) throw new StoreNotInitializedError();
          const applications = applicationStore(trx);
          const id = await meta.getMeta(BOOTSTRAP_APPLICATION);
          const existing = id === undefined ? undefined : await applications.findById(tenantId, id);
          const permissions = managementPermissions({ includeTenantCreate: true });
          const key = generateApiKey("management");
          const now = clock.now();
          if (existing === undefined) {
            const issued = await insertApplication(trx, {
              tenantId,
              name: "default administrator",
              type: "management",
              permissions,
              rules: [],
              createdBy: null,
              createdAt: now,
              expiresAt: null,
              key,
            });
            await meta.setMeta(BOOTSTRAP_APPLICATION, issued.application.id);
            await audit?.within(trx, [
              bySystem(tenantId, "application.regenerate_key", issued.application.id),
            ]);
            return key;
          }
          const modified = { by: existing.id, at: now.toISOString() };
          await applications.update(tenantId, existing.id, {
            name: existing.name,
            permissions,
            rules: [],
            modifiedBy: modified.by,
            modifiedAt: modified.at,
          });
          await applications.replaceKeyHash(tenantId, existing.id, hashApiKey(key), modified);
          await audit?.within(trx, [bySystem(tenantId, "application.regenerate_key", existing.id)]);
          return key;
        },
        { lock: "tessera:bootstrap" },
      );
    },
  };
}

export type TenantService = ReturnType<typeof createTenantService>;
