import { applicationsIn } from "../applications/service.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Application, Principal } from "../access/principal.js";
import type { Clock } from "../shared/clock.js";
import { uuidv7 } from "../crypto/uuid-v7.js";
import { mergePatch } from "../json/merge-patch.js";
import { AppError, addError, type FieldErrors } from "../server/errors.js";
import { textProblem } from "../shared/text.js";
import { offsetOf, pageOf, type Page, type PageRequest } from "../shared/pages.js";
import { type Executor, type Reads, writeContext } from "../storage/database.js";
import type { TenantKeys } from "../keys/tenant-keys.js";
import { checkReactorCode, type CodeProblem } from "./sandbox/code-check.js";
import type { NpmModule } from "./sandbox/modules.js";
import { MAX_CONFIGURATION_ENTRIES } from "./schemas.js";
import { openConfiguration, sealConfiguration } from "./sealing.js";
import { reactorStore, type StoredReactor } from "./store.js";
import type { Reactor, RunnableReactor } from "./types.js";

/** A whole reactor as POST and PUT give it; the schema has checked types and lengths. */
export interface ReactorInput {
  readonly name: string;
  readonly code: string;
  readonly configuration: Readonly<Record<string, string>>;
  /** null for no Application (`svc` is then null in the reactor). */
  readonly applicationId: string | null;
}

/** An RFC 7386 merge patch: absent members stay as they are. */
export interface ReactorPatch {
  readonly name?: string;
  readonly code?: string;
  /** Merged key by key; a null value removes that key, and null for the whole map empties it. */
  readonly configuration?: Readonly<Record<string, string | null>> | null;
  /** null removes the Application. */
  readonly applicationId?: string | null;
}

export interface CreatedReactor {
  readonly reactor: Reactor;
  /** Create is the one response that shows the Application itself (spec §2.5). */
  readonly application: Application | null;
}

export interface ReactorServiceDeps {
  readonly db: Executor;
  /** Where the lookups of a react go (the store's reader connection on SQLite); through `db` when absent. */
  readonly reads?: Pick<Reads, "readOne" | "configVersion">;
  readonly keys: TenantKeys;
  readonly clock: Clock;
  readonly audit: AuditRecorder;
  /** The npm packages reactor code may require (TESSERA_REACTOR_MODULES); the default list when absent. */
  readonly modules?: readonly NpmModule[];
  /**
   * Told once an update or a delete of a reactor has committed, so that this instance stops the workers holding
   * its old code (main.ts wires the runtime's discard; the service knows nothing of workers).
   */
  readonly retired?: (reactorId: string) => void;
}

/** What the log keeps of a reactor change: never the configuration's values, only which names it has. */
function reactorDetails(input: ReactorInput) {
  return {
    name: input.name,
    configuration_names: Object.keys(input.configuration),
    application_id: input.applicationId,
  };
}

type Applications = ReturnType<typeof applicationsIn>;

export function createReactorService({
  db,
  reads,
  keys,
  clock,
  audit,
  modules,
  retired,
}: ReactorServiceDeps) {
  const store = reactorStore(db, reads);
  const applications = applicationsIn(db);

  /** `trx`: the transaction the caller holds, through which a key not yet in memory is read. */
  async function open({ record, sealed }: StoredReactor, trx?: Executor): Promise<Reactor> {
    const key = await keys.version(record.tenantId, "data", sealed.keyVersion, trx);
    return { ...record, configuration: openConfiguration(key, record.tenantId, record.id, sealed) };
  }

  async function findVisible(principal: Principal, id: string): Promise<StoredReactor> {
    const stored = await store.findById(principal.tenantId, id);
    // Another tenant's reactor reads exactly like a missing one (DESIGN §5.4).
    if (stored === undefined) throw AppError.notFound(`Reactor ${id}`);
    return stored;
  }

  /**
   * Every problem at once, the Application's included; answers the input normalised and its Application.
   * `apps` reads the Application: through the transaction when there is one.
   */
  async function checked(
    tenantId: string,
    input: ReactorInput,
    apps: Applications = applications,
  ): Promise<{ input: ReactorInput; application: Application | null }> {
    const errors: FieldErrors = {};
    const name = input.name.trim();
    const nameProblem = textProblem(name);
    if (nameProblem !== undefined) addError(errors, "name", nameProblem);
    for (const message of codeProblems(input.code, modules)) addError(errors, "code", message);
    if (Object.keys(input.configuration).length > MAX_CONFIGURATION_ENTRIES) {
      addError(errors, "configuration", `must have at most ${MAX_CONFIGURATION_ENTRIES} entries`);
    }
    const application =
      input.applicationId === null
        ? null
        : await usableApplication(apps, tenantId, input.applicationId, errors);
    if (Object.keys(errors).length > 0) throw AppError.validation(errors);
    return { input: { ...input, name }, application };
  }

  /** spec §2.5: the Application must be the caller's tenant's, and public or private. */
  async function usableApplication(
    apps: Applications,
    tenantId: string,
    id: string,
    errors: FieldErrors,
  ): Promise<Application | null> {
    const application = await apps.find(tenantId, id);
    // An expired Application is as good as deleted: its key is refused already, before a sweep removes it.
    if (application === undefined || isExpired(application, clock.now())) {
      addError(errors, "application.id", "must be the id of an Application of this tenant");
      return null;
    }
    if (application.type === "management") {
      addError(errors, "application.id", "must be a public or private Application, not management");
      return null;
    }
    return application;
  }

  /**
   * PUT and PATCH: `change` turns the reactor as it is now into what is written. The row is locked before it is
   * read (store.lockForUpdate), so the updates of one reactor run one after the other on both stores: a patch
   * merges into what the update before it wrote, none is lost, and none is refused for coming at the same time.
   * Everything in between reads through the transaction: on SQLite a read through the store itself would wait
   * for the transaction to end.
   */
  async function update(
    principal: Principal,
    id: string,
    change: (current: Reactor) => ReactorInput,
  ): Promise<Reactor> {
    const { tenantId } = principal;
    const updated = await db.transaction().execute(async (trx) => {
      const reactors = reactorStore(trx);
      const stored = await reactors.lockForUpdate(tenantId, id);
      // Another tenant's reactor reads exactly like a missing one (DESIGN §5.4).
      if (stored === undefined) throw AppError.notFound(`Reactor ${id}`);
      const current = await open(stored, trx);
      const { input } = await checked(tenantId, change(current), applicationsIn(trx));
      const key = await keys.current(tenantId, "data", trx);
      const changes = {
        name: input.name,
        code: input.code,
        applicationId: input.applicationId,
        sealed: sealConfiguration(key, tenantId, id, input.configuration),
        modifiedBy: principal.application.id,
        modifiedAt: clock.now().toISOString(),
      };
      await reactors.update(tenantId, id, changes);
      await audit.within(writeContext(trx), [
        auditEntry(principal, "reactor.update", { type: "reactor", id }, { details: reactorDetails(input) }),
      ]);
      return {
        ...current,
        name: changes.name,
        code: changes.code,
        applicationId: changes.applicationId,
        configuration: { ...input.configuration },
        version: current.version + 1,
        modifiedBy: changes.modifiedBy,
        modifiedAt: changes.modifiedAt,
      };
    });
    retired?.(id);
    return updated;
  }

  return {
    async create(principal: Principal, input: ReactorInput): Promise<CreatedReactor> {
      const { tenantId } = principal;
      const { input: valid, application } = await checked(tenantId, input);
      const now = clock.now();
      const key = await keys.current(tenantId, "data");
      const reactor: Reactor = {
        id: uuidv7(now.getTime()),
        tenantId,
        name: valid.name,
        code: valid.code,
        configuration: { ...valid.configuration },
        applicationId: valid.applicationId,
        version: 1,
        createdBy: principal.application.id,
        createdAt: now.toISOString(),
        modifiedBy: null,
        modifiedAt: null,
      };
      await db.transaction().execute(async (trx) => {
        await reactorStore(trx).insert(
          reactor,
          sealConfiguration(key, tenantId, reactor.id, reactor.configuration),
        );
        await audit.within(writeContext(trx), [
          auditEntry(
            principal,
            "reactor.create",
            { type: "reactor", id: reactor.id },
            { details: reactorDetails(valid) },
          ),
        ]);
      });
      return { reactor, application };
    },

    async get(principal: Principal, id: string): Promise<Reactor> {
      return open(await findVisible(principal, id));
    },

    async list(
      principal: Principal,
      filter: { ids: readonly string[]; name?: string },
      page: PageRequest,
    ): Promise<Page<Reactor>> {
      if (filter.name?.includes("\u0000")) {
        throw AppError.validation({ name: ["must not contain NUL characters"] });
      }
      const { items, total } = await store.list(principal.tenantId, {
        ids: filter.ids,
        ...(filter.name !== undefined && { name: filter.name }),
        offset: offsetOf(page),
        limit: page.size,
      });
      return pageOf(await Promise.all(items.map((item) => open(item))), total, page);
    },

    /** PUT: a full replacement; an absent Application removes the one there was. */
    replace(principal: Principal, id: string, input: ReactorInput): Promise<Reactor> {
      return update(principal, id, () => input);
    },

    /** PATCH (RFC 7386), merged into the reactor as the update before it left it. */
    async patch(principal: Principal, id: string, patch: ReactorPatch): Promise<void> {
      await update(principal, id, (current) => ({
        name: patch.name ?? current.name,
        code: patch.code ?? current.code,
        configuration: patchedConfiguration(current.configuration, patch.configuration),
        applicationId: patch.applicationId === undefined ? current.applicationId : patch.applicationId,
      }));
    },

    async delete(principal: Principal, id: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        if (!(await reactorStore(trx).delete(principal.tenantId, id)))
          throw AppError.notFound(`Reactor ${id}`);
        await audit.within(writeContext(trx), [
          auditEntry(principal, "reactor.delete", { type: "reactor", id }),
        ]);
      });
      retired?.(id);
    },

    /**
     * For the invocation: the reactor with its configuration decrypted, or undefined when the tenant has no
     * such reactor. No principal: the caller has already been authorised for `token:use`.
     */
    async loadRunnable(
      tenantId: string,
      id: string,
      configVersion?: number,
    ): Promise<RunnableReactor | undefined> {
      const stored = await store.findById(tenantId, id, configVersion);
      if (stored === undefined) return undefined;
      const reactor = await open(stored);
      return {
        id: reactor.id,
        version: reactor.version,
        code: reactor.code,
        configuration: { ...reactor.configuration },
        applicationId: reactor.applicationId,
      };
    },
  };
}

export type ReactorService = ReturnType<typeof createReactorService>;

/** RFC 7386 on the reactor as a document: `configuration: null` removes the member, which reads as empty. */
function patchedConfiguration(
  current: Readonly<Record<string, string>>,
  patch: ReactorPatch["configuration"],
): Readonly<Record<string, string>> {
  if (patch === undefined) return current;
  if (patch === null) return {};
  return mergePatch(current, patch) as Record<string, string>;
}

/** What is wrong with reactor code: blank, unstorable, a syntax error or a module outside the allow-list. */
function codeProblems(code: string, modules: readonly NpmModule[] | undefined): string[] {
  const problem = textProblem(code);
  if (problem !== undefined) return [problem];
  const check = modules === undefined ? checkReactorCode(code) : checkReactorCode(code, modules);
  return check.ok ? [] : check.problems.map(describeCodeProblem);
}

/** "Unexpected token ';' (line 1, column 11)": where in the code, as an editor counts (from 1). */
function describeCodeProblem(problem: CodeProblem): string {
  if (problem.line === undefined) return problem.message;
  const where =
    problem.column === undefined ? `line ${problem.line}` : `line ${problem.line}, column ${problem.column}`;
  return `${problem.message} (${where})`;
}

function isExpired(application: Application, now: Date): boolean {
  return application.expiresAt !== null && application.expiresAt <= now.toISOString();
}
