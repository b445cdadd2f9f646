import { randomUUID } from "node:crypto";
import { managementPermissions } from "../access/permissions.js";
import { applicationsIn, type IssuedApplication } from "../applications/service.js";
import type { Principal } from "../access/principal.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Clock } from "../shared/clock.js";
import { generateApiKey } from "../crypto/api-keys.js";
import type { NewTenantKeys, TenantKeys } from "../keys/tenant-keys.js";
import { AppError } from "../server/errors.js";
import { textProblem } from "../shared/text.js";
import { type Executor, type Store, writeContext } from "../storage/database.js";
import { tenantStore, type PurgedCounts } from "./store.js";
import type { Tenant } from "./types.js";

const BOOTSTRAP_TENANT = "bootstrap_tenant_id";
const BOOTSTRAP_APPLICATION = "bootstrap_application_id";

export interface TenantServiceDeps {
  readonly store: Store;
  readonly keys: Pick<TenantKeys, "prepare" | "createFor" | "destroy">;
  /** Chains what the audit log holds (audit/sealer.ts): a tenant's last entries are sealed before its key goes. */
  readonly sealAudit?: () => Promise<unknown>;
  readonly clock: Clock;
  /** Absent where nothing is recorded (tests of the key machinery). */
  readonly audit?: AuditRecorder;
}

export interface CreatedTenant extends IssuedApplication {
  readonly tenant: Tenant;
}

interface PreparedTenant {
  readonly tenant: Tenant;
  readonly keys: NewTenantKeys;
}

export class StoreNotInitializedError extends Error {
  constructor() {
    super("the store has no bootstrap tenant yet: run `tessera init` or `tessera serve` first");
    this.name = "StoreNotInitializedError";
  }
}

/** What shredding a tenant destroyed (DELETE /tenants/{id}). */
export interface ShreddedTenant {
  readonly id: string;
  readonly shreddedAt: string;
  /** Rows deleted: tenant keys, tokens, reactors, reactor invocations, idempotent answers, Applications. */
  readonly destroyed: PurgedCounts & { readonly tenant_keys: number };
  /** Whether the store's files were scrubbed of the deleted rows too (SQLite: yes, unless held; PostgreSQL: no). */
  readonly filesScrubbed: boolean;
}

export function createTenantService({ store, keys, clock, audit, sealAudit }: TenantServiceDeps) {
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
    return { tenant, keys: await keys.prepare(tenant.id) };
  }

  /** Called inside a transaction: a tenant never exists without its keys and its first management Application. */
  async function insertTenant(
    trx: Executor,
    prepared: PreparedTenant,
    options: { includeTenantCreate: boolean; key?: string },
  ): Promise<CreatedTenant> {
    const { tenant } = prepared;
    await tenantStore(trx).insert(tenant);
    await keys.createFor(trx, prepared.keys, tenant.createdAt);
    const issued = await applicationsIn(trx).insert({
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
    /** Every tenant's id, in the order they were created (key rotation, audit verification). */
    ids(): Promise<string[]> {
      return tenantStore(store.db).ids();
    },

    /** A new tenant's administrator gets every management permission except creating further tenants. */
    async create(principal: Principal, input: { name: string }): Promise<CreatedTenant> {
      const name = input.name.trim();
      const problem = textProblem(name);
      if (problem !== undefined) throw AppError.validation({ name: [problem] });
      const prepared = await prepareTenant(name, principal.application.id);
      return store.transaction(async (trx) => {
        const created = await insertTenant(trx, prepared, { includeTenantCreate: false });
        await audit?.within(writeContext(trx), [
          auditEntry(principal, "tenant.create", { type: "tenant", id: created.tenant.id }),
          {
            ...bySystem(created.tenant.id, "tenant.create", created.tenant.id),
            actorId: principal.application.id,
          },
        ]);
        return created;
      });
    },

    /**
     * Crypto-shredding (docs/keys.md#shredding-a-tenant): destroys the tenant's keys, so that nothing it stored can
     * be decrypted again, and deletes its data and Applications in the same transaction; its audit log stays, sealed
     * first, and the shredding is recorded in the bootstrap tenant's log. Only the bootstrap tenant's management
     * Applications may (the route also requires tenant:create), and not of the bootstrap tenant itself.
     */
    async shred(principal: Principal, tenantId: string): Promise<ShreddedTenant> {
      const bootstrap = await tenantStore(store.db).getMeta(BOOTSTRAP_TENANT);
      if (principal.tenantId !== bootstrap) {
        throw AppError.forbidden("Only the bootstrap tenant's management Applications may shred a tenant.");
      }
      if (tenantId === bootstrap) {
        throw new AppError(
          "conflict",
          "The bootstrap tenant cannot be shredded: it manages every other tenant.",
        );
      }
      if ((await tenantStore(store.db).findById(tenantId)) === undefined) throw AppError.notFound("Tenant");
      await sealAudit?.();
      const shreddedAt = clock.now().toISOString();
      const destroyed = await store.transaction(
        async (trx) => {
          // Shredded meanwhile by another request: absent, as it would be now.
          if ((await tenantStore(trx).findById(tenantId)) === undefined) throw AppError.notFound("Tenant");
          const counts = { tenant_keys: await keys.destroy(trx, tenantId) };
          const purged = { ...counts, ...(await tenantStore(trx).purge(tenantId, shreddedAt)) };
          await audit?.within(writeContext(trx), [
            auditEntry(principal, "tenant.shred", { type: "tenant", id: tenantId }, { details: purged }),
          ]);
          return purged;
        },
        { lock: `tessera:keys:${tenantId}` },
      );
      return { id: tenantId, shreddedAt, destroyed, filesScrubbed: await store.scrubDeleted() };
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
          await audit?.within(writeContext(trx), [
            bySystem(created.tenant.id, "tenant.create", created.tenant.id),
          ]);
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
          const applications = applicationsIn(trx);
          const id = await meta.getMeta(BOOTSTRAP_APPLICATION);
          const existing = id === undefined ? undefined : await applications.find(tenantId, id);
          const permissions = managementPermissions({ includeTenantCreate: true });
          const key = generateApiKey("management");
          const now = clock.now();
          if (existing === undefined) {
            const issued = await applications.insert({
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
            await audit?.within(writeContext(trx), [
              bySystem(tenantId, "application.regenerate_key", issued.application.id),
            ]);
            return key;
          }
          await applications.reissue(existing, permissions, key, now.toISOString());
          await audit?.within(writeContext(trx), [
            bySystem(tenantId, "application.regenerate_key", existing.id),
          ]);
          return key;
        },
        { lock: "tessera:bootstrap" },
      );
    },
  };
}

export type TenantService = ReturnType<typeof createTenantService>;
