import { explain, type Decision, type Explanation } from "../access/decide.js";
import type { TokenPermission } from "../access/permissions.js";
import { containerProblem, normalizeContainer } from "../access/rules.js";
import type { ApplicationService } from "../applications/service.js";
import { granteeOf, type Application, type Principal } from "../access/principal.js";
import type { SessionService } from "../sessions/service.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import { AppError, type FieldErrors } from "../server/errors.js";
import type { TokenService } from "../tokens/service.js";

/** The decision for a token, or for a token that would lie in `containers`. */
export type ExplainSubject = { readonly tokenId: string } | { readonly containers: readonly string[] };

export interface ExplainInput {
  /** Whose decision: an Application's, or a session's (then bounded by the Application that authorized it). */
  readonly applicationId?: string;
  readonly sessionId?: string;
  readonly permission: TokenPermission;
  readonly tokenId?: string;
  readonly containers?: readonly string[];
}

export interface AccessExplanation {
  /** The Application explained, or for a session the one that authorized it. */
  readonly application: Application;
  readonly sessionId?: string;
  readonly permission: TokenPermission;
  readonly tokenId?: string;
  readonly containers: readonly string[];
  /** What the API decides over the token's containers together (reads, searches, use, delete, update). */
  readonly result: Explanation;
  /** Writes only: the decision for each container alone, all of which a create (or a move) needs. */
  readonly eachContainer?: readonly { readonly container: string; readonly decision: Decision | undefined }[];
  readonly allowed: boolean;
}

export interface ExplainServiceDeps {
  readonly applications: Pick<ApplicationService, "get">;
  readonly tokens: Pick<TokenService, "containersOf">;
  readonly sessions: Pick<SessionService, "principalOf">;
  readonly audit: AuditRecorder;
}

const WRITES: ReadonlySet<TokenPermission> = new Set(["token:create", "token:update"]);

/**
 * POST /access/explain: which rule of an Application decides a permission on a token, through `explain` in
 * access/decide.ts, the walk every token route decides with. Nothing of the token is read but its containers.
 */
export function createExplainService({ applications, tokens, sessions, audit }: ExplainServiceDeps) {
  /** Whose decision is explained, as a principal: the Application, or the session as its key would act now. */
  async function holderOf(principal: Principal, input: ExplainInput): Promise<Principal> {
    if (input.sessionId !== undefined) return sessions.principalOf(principal, input.sessionId);
    if (input.applicationId === undefined)
      throw new AppError("internal", "checkedSubject lets no body through without a holder");
    const application = await applications.get(principal, input.applicationId);
    return { tenantId: principal.tenantId, application };
  }

  return {
    async explain(principal: Principal, input: ExplainInput): Promise<AccessExplanation> {
      const subject = checkedSubject(input);
      const holder = await holderOf(principal, input);
      const { application } = holder;
      const grantee = granteeOf(holder);
      const containers =
        "tokenId" in subject ? await tokens.containersOf(principal, subject.tokenId) : subject.containers;
      const id = "tokenId" in subject ? { id: subject.tokenId } : {};
      const result = explain(grantee, input.permission, { ...id, containers });
      const eachContainer = WRITES.has(input.permission)
        ? containers.map((container) => ({
            container,
            decision: explain(grantee, input.permission, { ...id, containers: [container] }).decision,
          }))
        : undefined;
      // A create needs a rule on every container it puts the token in (mayWriteInto); every other permission,
      // an update of the token where it lies included, needs one rule covering any of its containers.
      const allowed =
        input.permission === "token:create"
          ? (eachContainer ?? []).every((check) => check.decision !== undefined)
          : result.decision !== undefined;
      if ("tokenId" in subject) {
        // It tells a management key where a token lies and who may reach it: recorded like a read of the token.
        await audit.record([
          auditEntry(
            principal,
            "token.explain",
            { type: "token", id: subject.tokenId },
            {
              details: {
                application_id: application.id,
                ...(holder.session !== undefined && { explained_session_id: holder.session.id }),
                permission: input.permission,
                allowed,
              },
            },
          ),
        ]);
      }
      return {
        application,
        ...(holder.session !== undefined && { sessionId: holder.session.id }),
        permission: input.permission,
        ...("tokenId" in subject && { tokenId: subject.tokenId }),
        containers,
        result,
        ...(eachContainer !== undefined && { eachContainer }),
        allowed,
      };
    },
  };
}

export type ExplainService = ReturnType<typeof createExplainService>;

function checkedSubject(input: ExplainInput): ExplainSubject {
  const errors: FieldErrors = {};
  if ((input.applicationId === undefined) === (input.sessionId === undefined)) {
    errors.application_id = ["give application_id or session_id, one of them"];
  }
  let subject: ExplainSubject | undefined;
  if (input.tokenId !== undefined && input.containers !== undefined) {
    errors.token_id = ["give token_id or containers, not both"];
  } else if (input.tokenId !== undefined) {
    subject = { tokenId: input.tokenId };
  } else if (input.containers === undefined) {
    errors.containers = ["give token_id or containers"];
  } else {
    input.containers.forEach((container, i) => {
      const problem = containerProblem(container);
      if (problem !== undefined) errors[`containers[${i}]`] = [problem];
    });
    subject = { containers: [...new Set(input.containers.map(normalizeContainer))] };
  }
  if (subject === undefined || Object.keys(errors).length > 0) throw AppError.validation(errors);
  return subject;
}
