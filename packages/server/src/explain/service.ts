import { explain, type Decision, type Explanation } from "../access/decide.js";
import type { TokenPermission } from "../access/permissions.js";
import { containerProblem, normalizeContainer } from "../access/rules.js";
import type { ApplicationService } from "../applications/service.js";
import type { Application, Principal } from "../access/principal.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import { AppError, type FieldErrors } from "../server/errors.js";
import type { TokenService } from "../tokens/service.js";

/** The decision for a token, or for a token that would lie in `containers`. */
export type ExplainSubject = { readonly tokenId: string } | { readonly containers: readonly string[] };

export interface ExplainInput {
  readonly applicationId: string;
  readonly permission: TokenPermission;
  readonly tokenId?: string;
  readonly containers?: readonly string[];
}

export interface AccessExplanation {
  readonly application: Application;
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
  readonly audit: AuditRecorder;
}

const WRITES: ReadonlySet<TokenPermission> = new Set(["token:create", "token:update"]);

/**
 * POST /access/explain: which rule of an Application decides a permission on a token, through `explain` in
 * access/decide.ts, the walk every token route decides with. Nothing of the token is read but its containers.
 */
export function createExplainService({ applications, tokens, audit }: ExplainServiceDeps) {
  return {
    async explain(principal: Principal, input: ExplainInput): Promise<AccessExplanation> {
      const subject = checkedSubject(input);
      const application = await applications.get(principal, input.applicationId);
      const containers =
        "tokenId" in subject ? await tokens.containersOf(principal, subject.tokenId) : subject.containers;
      const id = "tokenId" in subject ? { id: subject.tokenId } : {};
      const result = explain(application, input.permission, { ...id, containers });
      const eachContainer = WRITES.has(input.permission)
        ? containers.map((container) => ({
            container,
            decision: explain(application, input.permission, { ...id, containers: [container] }).decision,
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
            { details: { application_id: application.id, permission: input.permission, allowed } },
          ),
        ]);
      }
      return {
        application,
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
  if (input.tokenId !== undefined && input.containers !== undefined) {
    errors.token_id = ["give token_id or containers, not both"];
  } else if (input.tokenId !== undefined) {
    return { tokenId: input.tokenId };
  } else if (input.containers === undefined) {
    errors.containers = ["give token_id or containers"];
  } else {
    input.containers.forEach((container, i) => {
      const problem = containerProblem(container);
      if (problem !== undefined) errors[`containers[${i}]`] = [problem];
    });
    if (Object.keys(errors).length === 0) {
      return { containers: [...new Set(input.containers.map(normalizeContainer))] };
    }
  }
  throw AppError.validation(errors);
}
