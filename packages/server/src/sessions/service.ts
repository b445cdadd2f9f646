import { randomBytes, randomUUID } from "node:crypto";
import { holdsPermission, type Permission } from "../access/permissions.js";
import type { Principal } from "../access/principal.js";
import { normalizeRules, validateSessionGrant, type AccessRule } from "../access/rules.js";
import type { ApplicationService } from "../applications/service.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import { generateApiKey, hashApiKey, isKeyOfKind } from "../crypto/api-keys.js";
import type { Authenticator } from "../server/auth.js";
import { AppError, type FieldErrors } from "../server/errors.js";
import type { Clock } from "../shared/clock.js";
import { parseTimestamp } from "../shared/text.js";
import { type Executor, writeContext } from "../storage/database.js";
import type { SessionSettings } from "./settings.js";
import { sessionStore } from "./store.js";

export interface CreatedSession {
  readonly sessionKey: string;
  readonly nonce: string;
  readonly expiresAt: string;
}

export interface AuthorizeInput {
  readonly nonce: string;
  readonly expiresAt?: string;
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
}

export interface SessionServiceDeps {
  readonly db: Executor;
  readonly clock: Clock;
  readonly audit: AuditRecorder;
  readonly settings: SessionSettings;
  /** The authorizing Application as it is now, at every request of its sessions. */
  readonly applications: Pick<ApplicationService, "principalById">;
}

/** One answer for every nonce that cannot be authorized, so that none tells which case it is. */
const nonceRefused = () =>
  AppError.validation(
    { nonce: ["is not a session awaiting authorization (unknown, already authorized, or expired)"] },
    "The nonce cannot be authorized.",
  );

/**
 * Sessions (wire-format §6, docs/sessions.md): a public key creates one and receives a session key and a nonce; a
 * backend holding a private key authorizes the nonce, once, with permissions and condition rules it holds itself;
 * the session key then acts, until it expires, within both its grant and its authorizer's current rules.
 */
export function createSessionService({ db, clock, audit, settings, applications }: SessionServiceDeps) {
  const store = sessionStore(db);
  const now = () => clock.now().toISOString();

  return {
    async create(principal: Principal): Promise<CreatedSession> {
      const created = clock.now();
      const expiresAt = new Date(created.getTime() + settings.ttlMs).toISOString();
      const sessionKey = generateApiKey("session");
      const nonce = randomBytes(32).toString("base64url");
      const id = randomUUID();
      await db.transaction().execute(async (trx) => {
        await sessionStore(trx).insert(
          {
            id,
            tenantId: principal.tenantId,
            createdBy: principal.application.id,
            createdAt: created.toISOString(),
            expiresAt,
            authorization: null,
          },
          { key: hashApiKey(sessionKey), nonce: hashApiKey(nonce) },
        );
        await audit.within(writeContext(trx), [
          auditEntry(
            principal,
            "session.create",
            { type: "session", id },
            { details: { expires_at: expiresAt } },
          ),
        ]);
      });
      return { sessionKey, nonce, expiresAt };
    },

    async authorize(principal: Principal, input: AuthorizeInput): Promise<void> {
      const at = clock.now();
      const errors: FieldErrors = validateSessionGrant(input);
      const parsed = input.expiresAt === undefined ? undefined : parseTimestamp(input.expiresAt);
      const requested = parsed !== undefined && "iso" in parsed ? parsed.iso : undefined;
      if (parsed !== undefined && "problem" in parsed) errors.expires_at = [parsed.problem];
      else if (requested !== undefined && requested <= at.toISOString()) {
        errors.expires_at = ["must be in the future"];
      }
      if (Object.keys(errors).length > 0) throw AppError.validation(errors);

      // No escalation: the authorizer hands out only permissions it holds itself (and, at every request of the
      // session, only on tokens its own rules reach: access/decide.ts).
      const granted = [...input.permissions, ...input.rules.flatMap((r) => r.permissions)];
      const missing = [...new Set(granted)].filter((p) => !holdsPermission(principal.application, p));
      if (missing.length > 0) {
        throw AppError.forbidden(
          `The calling Application cannot grant permissions it does not hold: ${missing.join(", ")}`,
        );
      }

      const session = await store.findAwaiting(principal.tenantId, hashApiKey(input.nonce), at.toISOString());
      if (session === undefined) throw nonceRefused();
      const latest = new Date(new Date(session.createdAt).getTime() + settings.maxTtlMs).toISOString();
      const expiresAt = requested ?? session.expiresAt;
      if (expiresAt > latest) {
        throw AppError.validation({
          expires_at: [
            `must be at most ${settings.maxTtlMs / 1000} s after the session was created (${latest})`,
          ],
        });
      }
      const authorization = {
        by: principal.application.id,
        at: at.toISOString(),
        permissions: [...new Set(input.permissions)],
        rules: normalizeRules(input.rules),
      };
      await db.transaction().execute(async (trx) => {
        const done = await sessionStore(trx).authorize(
          principal.tenantId,
          session.id,
          authorization,
          expiresAt,
          at.toISOString(),
        );
        // Another authorization of the same nonce committed first.
        if (!done) throw nonceRefused();
        await audit.within(writeContext(trx), [
          auditEntry(
            principal,
            "session.authorize",
            { type: "session", id: session.id },
            {
              details: {
                expires_at: expiresAt,
                permissions: authorization.permissions,
                rules: authorization.rules.map((r) => ({
                  priority: r.priority,
                  conditions: r.conditions,
                  transform: r.transform,
                  permissions: r.permissions,
                })),
              },
            },
          ),
        ]);
      });
    },

    /**
     * `next`, with session keys accepted too (by their prefix). A session key authenticates once authorized and
     * until it expires, as its authorizing Application as that is now: deleted or expired, the session ends with it.
     */
    authenticator(next: Authenticator): Authenticator {
      return {
        async authenticate(key) {
          if (!isKeyOfKind(key, "session")) return next.authenticate(key);
          const session = await store.findByKeyHash(hashApiKey(key), now());
          const authorization = session?.authorization;
          if (session === undefined || authorization == null) return undefined;
          const authorizer = await applications.principalById(session.tenantId, authorization.by);
          if (authorizer === undefined) return undefined;
          return {
            principal: {
              ...authorizer,
              session: {
                id: session.id,
                permissions: authorization.permissions,
                rules: authorization.rules,
                expiresAt: session.expiresAt,
              },
            },
            read: {},
          };
        },
      };
    },

    /**
     * A session of the caller's tenant as its key would act now (POST /access/explain): its grant, bounded by its
     * authorizing Application as that is now. Unknown, another tenant's, expired, not yet authorized or whose
     * authorizer is gone: 404, as its key would be refused.
     */
    async principalOf(principal: Principal, id: string): Promise<Principal> {
      const session = await store.findById(principal.tenantId, id, now());
      const authorization = session?.authorization;
      const authorizer =
        session === undefined || authorization == null
          ? undefined
          : await applications.principalById(session.tenantId, authorization.by);
      if (session === undefined || authorization == null || authorizer === undefined) {
        throw AppError.notFound(`Session ${id}`);
      }
      return {
        ...authorizer,
        session: {
          id: session.id,
          permissions: authorization.permissions,
          rules: authorization.rules,
          expiresAt: session.expiresAt,
        },
      };
    },

    /** Removes sessions whose `expires_at` has passed; their keys were refused from that instant. */
    sweepExpired(): Promise<number> {
      return store.deleteExpired(now());
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
