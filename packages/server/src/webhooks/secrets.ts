import type { Principal } from "../applications/types.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Clock } from "../clock.js";
import type { Keyring } from "../crypto/keyring.js";
import type { Store } from "../storage/database.js";
import { tenantStore } from "../tenants/store.js";
import { secretText } from "./signing.js";

/** After a rotation, messages are signed with the previous secret as well for this long. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60_000;

export interface WebhookSecret {
  /** `whsec_` and base64: the form Standard Webhooks libraries take. */
  readonly secret: string;
  readonly version: number;
  readonly createdAt: string;
  /** While the previous secret still signs too (a rotation less than a day ago), when it stops. */
  readonly previousValidUntil: string | undefined;
}

/**
 * The tenant's webhook signing secret: the `webhook` key of its keyring (wrapped by the master key at rest like
 * every tenant key), shown to management callers and rotated on request. A rotation keeps the previous secret
 * signing for a day, so receivers can switch to the new one without dropping a message.
 */
export function createWebhookSecrets(deps: {
  store: Pick<Store, "db" | "transaction">;
  keyring: Keyring;
  clock: Clock;
  audit: AuditRecorder;
}) {
  async function loaded(tenantId: string) {
    const keys = await tenantStore(deps.store.db).keysOf(tenantId, "webhook");
    const newest = keys[0];
    if (newest === undefined) throw new Error("tenant has no webhook key");
    const overlapEnds = new Date(new Date(newest.createdAt).getTime() + ROTATION_OVERLAP_MS);
    const previous = keys[1] !== undefined && overlapEnds > deps.clock.now() ? keys[1] : undefined;
    return {
      newest: { ...newest, key: await deps.keyring.unwrap(tenantId, newest) },
      previous: previous && {
        ...previous,
        key: await deps.keyring.unwrap(tenantId, previous),
        until: overlapEnds,
      },
    };
  }

  function present(loadedKeys: Awaited<ReturnType<typeof loaded>>): WebhookSecret {
    return {
      secret: secretText(loadedKeys.newest.key),
      version: loadedKeys.newest.version,
      createdAt: loadedKeys.newest.createdAt,
      previousValidUntil: loadedKeys.previous?.until.toISOString(),
    };
  }

  return {
    /** The keys that sign a message sent now: the newest, and the previous one during the overlap. */
    async signingKeys(tenantId: string): Promise<Buffer[]> {
      const { newest, previous } = await loaded(tenantId);
      return previous === undefined ? [newest.key] : [newest.key, previous.key];
    },

    async get(principal: Principal): Promise<WebhookSecret> {
      return present(await loaded(principal.tenantId));
    },

    async rotate(principal: Principal): Promise<WebhookSecret> {
      const { tenantId } = principal;
      await deps.store.transaction(
        async (trx) => {
          const [newest] = await tenantStore(trx).keysOf(tenantId, "webhook");
          const version = (newest?.version ?? 0) + 1;
          await tenantStore(trx).addKey(
            tenantId,
            await deps.keyring.newKey(tenantId, "webhook", version),
            deps.clock.now().toISOString(),
          );
          await deps.audit.within(trx, [
            auditEntry(
              principal,
              "webhook.rotate_secret",
              { type: "webhook_secret", id: null },
              { details: { version } },
            ),
          ]);
        },
        { lock: `tessera:keys:${tenantId}` },
      );
      return present(await loaded(tenantId));
    },
  };
}

export type WebhookSecrets = ReturnType<typeof createWebhookSecrets>;
