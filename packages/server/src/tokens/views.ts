import type { Decision } from "../access/decide.js";
import { applyTransform, showsData } from "../access/transform.js";
import type { TenantKeys } from "../keys/tenant-keys.js";
import type { Drafts } from "./draft.js";
import { openData } from "./sealing.js";
import type { StoredToken } from "./store.js";
import type { Token, TokenRecord } from "./types.js";

/** A token as one caller may see it: `shown` is absent when its rule redacts the data. */
export interface TokenView {
  readonly record: TokenRecord;
  readonly shown?: { readonly value: unknown };
  readonly deduplicated?: boolean;
  /** A deduplicated token the caller may not read: only id, type, tenant, fingerprint and containers. */
  readonly identityOnly?: boolean;
}

/** Tokens shown through the caller's decision: decrypted only when the decision shows some of the data. */
export function createViews({ keys, drafts }: { keys: TenantKeys; drafts: Pick<Drafts, "masked"> }) {
  /** `data` shown through `decision` (access/transform.ts), the token's mask evaluated where it masks. */
  function view(decision: Decision, record: TokenRecord, data: unknown): TokenView {
    const { mask } = record;
    const shown = applyTransform(decision, data, mask === null ? undefined : (d) => drafts.masked(mask, d));
    return shown === undefined ? { record } : { record, shown };
  }

  async function open(stored: StoredToken): Promise<Token> {
    const { record, sealed } = stored;
    const key = await keys.version(record.tenantId, "data", sealed.keyVersion);
    return { ...record, data: openData(key, record.tenantId, record.id, sealed) };
  }

  return {
    view,
    open,

    async ofStored(decision: Decision, stored: StoredToken): Promise<TokenView> {
      return showsData(decision, stored.record.mask !== null)
        ? view(decision, stored.record, (await open(stored)).data)
        : { record: stored.record };
    },

    /**
     * Many tokens of one tenant, each through its decision: the data keys are looked up once per key version
     * rather than once per token, and a redacted token's data is never opened.
     */
    async ofMany(
      tenantId: string,
      decided: readonly { stored: StoredToken; decision: Decision }[],
    ): Promise<TokenView[]> {
      const dataKeys = new Map<number, Buffer>();
      for (const { stored, decision } of decided) {
        const version = stored.sealed.keyVersion;
        if (showsData(decision, stored.record.mask !== null) && !dataKeys.has(version)) {
          dataKeys.set(version, await keys.version(tenantId, "data", version));
        }
      }
      return decided.map(({ stored: { record, sealed }, decision }) =>
        showsData(decision, record.mask !== null)
          ? view(
              decision,
              record,
              openData(dataKeys.get(sealed.keyVersion)!, record.tenantId, record.id, sealed),
            )
          : { record },
      );
    },
  };
}

export type Views = ReturnType<typeof createViews>;
