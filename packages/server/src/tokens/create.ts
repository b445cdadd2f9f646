import { decide } from "../access/decide.js";
import { granteeOf, type Principal } from "../access/principal.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Clock } from "../shared/clock.js";
import { uuidv7 } from "../crypto/uuid-v7.js";
import type { TenantKeys } from "../keys/tenant-keys.js";
import { AppError } from "../server/errors.js";
import { isUniqueViolation, type WriteContext } from "../storage/database.js";
import { assertMayWrite } from "./access.js";
import { tokenEntry } from "./audit-entries.js";
import {
  recordFields,
  type CreateTokenInput,
  type Drafts,
  type PreparedCreate,
  type WriteKeys,
} from "./draft.js";
import { sealData } from "./sealing.js";
import type { TokenStore } from "./store.js";
import type { TokenRecord } from "./types.js";
import type { TokenView, Views } from "./views.js";

/**
 * Creating tokens, shared by POST /tokens and the bulk tokenize: prepared in full before the write (drafts),
 * then, inside it, deduplicated under the fingerprints' locks, written and recorded.
 */
export function createTokenCreation(deps: {
  tokens: TokenStore;
  keys: TenantKeys;
  drafts: Drafts;
  views: Views;
  audit: AuditRecorder;
  clock: Clock;
}) {
  const { tokens, drafts, views, audit, clock } = deps;
  const now = () => clock.now().toISOString();

  return {
    /**
     * Keys are resolved before a transaction opens: on SQLite the transaction holds the only connection, so a
     * key lookup inside it would wait on itself.
     */
    async writeKeys(tenantId: string): Promise<WriteKeys> {
      const [data, fingerprint, index] = await Promise.all([
        deps.keys.current(tenantId, "data"),
        deps.keys.current(tenantId, "fingerprint"),
        deps.keys.current(tenantId, "index"),
      ]);
      return { data, fingerprint: fingerprint.key, index: index.key };
    },

    prepare(principal: Principal, input: CreateTokenInput, keys: WriteKeys): PreparedCreate {
      return drafts.prepareCreate(input, keys, (token) => assertMayWrite(principal, "token:create", token));
    },

    /**
     * Takes the deduplication locks of the prepared creates (tokens/store.ts), all of them before any lookup and
     * in one order, so that two bulk creates holding the same values in different orders cannot deadlock.
     */
    lockDuplicates(write: WriteContext, principal: Principal, prepared: readonly PreparedCreate[]) {
      return tokens.lockFingerprints(
        write,
        principal.tenantId,
        prepared
          .filter((p) => p.deduplicate)
          .map((p) => ({ type: p.draft.type, fingerprint: p.derived.fingerprint })),
      );
    },

    async commit(
      write: WriteContext,
      principal: Principal,
      { draft, derived, id, subject, deduplicate }: PreparedCreate,
      keys: WriteKeys,
    ): Promise<TokenView> {
      const { type, data } = draft;
      if (deduplicate) {
        // Under the lock taken for this fingerprint: a concurrent create of the same value has committed or waits.
        const existing = await tokens.findByFingerprint(
          write,
          principal.tenantId,
          type,
          derived.fingerprint,
          now(),
        );
        if (existing !== undefined) {
          const readable = decide(granteeOf(principal), "token:read", existing.record);
          await audit.within(write, [
            tokenEntry(principal, "token.create", existing.record.id, {
              decision: readable,
              details: { type, deduplicated: true },
            }),
          ]);
          if (readable === undefined)
            return { record: existing.record, deduplicated: true, identityOnly: true };
          return { ...(await views.ofStored(readable, existing)), deduplicated: true };
        }
      }

      const at = now();
      const record: TokenRecord = {
        id: id ?? uuidv7(clock.now().getTime()),
        tenantId: principal.tenantId,
        type,
        ...recordFields(draft, derived),
        createdBy: principal.application.id,
        createdAt: at,
        modifiedBy: null,
        modifiedAt: null,
      };
      try {
        await tokens.insert(
          write,
          record,
          sealData(keys.data, record.tenantId, record.id, data),
          derived.rows,
        );
      } catch (error) {
        if (isUniqueViolation(error))
          throw new AppError("conflict", `A token with id ${record.id} already exists.`);
        throw error;
      }
      // On what was checked before the write, not on a generated id: the answer shows what the check allowed.
      const decision = decide(granteeOf(principal), "token:create", subject);
      await audit.within(write, [
        tokenEntry(principal, "token.create", record.id, {
          decision,
          details: { type, containers: record.containers },
        }),
      ]);
      // The caller's own data, just sent: shown through its create rule (docs/tokens.md#access-rules-and-transforms).
      return decision === undefined ? { record } : views.view(decision, record, data);
    },
  };
}

export type TokenCreation = ReturnType<typeof createTokenCreation>;
