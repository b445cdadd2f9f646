import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Decision, Mismatch, PassedOver, RuleOrigin } from "../access/decide.js";
import type { AccessRule } from "../access/rules.js";
import { principalOf } from "../server/auth.js";
import { responses } from "../server/problem-schema.js";
import { ExplainBody, ExplanationSchema, type ExplanationWire } from "./schemas.js";
import type { AccessExplanation, ExplainService } from "./service.js";

type RuleWire = NonNullable<ExplanationWire["decided_by"]>;

function presentRule(rule: AccessRule, origin: RuleOrigin): RuleWire {
  return {
    source: origin.kind,
    ...(origin.kind === "rule" && { index: origin.index, priority: rule.priority }),
    ...(rule.description !== undefined && { description: rule.description }),
    ...(rule.container !== undefined && { container: rule.container }),
    ...(rule.conditions !== undefined && { conditions: rule.conditions.map((c) => ({ ...c })) }),
    transform: rule.transform,
    permissions: [...rule.permissions],
  };
}

function name(origin: RuleOrigin, rule: AccessRule): string {
  return origin.kind === "rule"
    ? `rules[${origin.index}] (priority ${rule.priority})`
    : `the top-level permission ${origin.permission}`;
}

const REASONS: Record<Mismatch, (step: PassedOver, permission: string, containers: string) => string> = {
  conditions: () => "not every one of its conditions holds for the token",
  permission: (step, permission) => `it holds ${step.ranked.rule.permissions.join(", ")}, not ${permission}`,
  container: (step, _permission, containers) =>
    `its container ${step.ranked.rule.container ?? ""} covers none of ${containers}`,
};

function summary(explanation: AccessExplanation, decision: Decision | undefined): string {
  const { permission, application, containers } = explanation;
  const ceiling = explanation.result.ceiling;
  if (explanation.sessionId !== undefined && ceiling !== undefined && ceiling.decision === undefined) {
    return `${permission} denied: a rule of the session decides, but no rule of ${application.name}, which authorized it, holding it covers any of ${containers.join(", ")}.`;
  }
  const uncovered = explanation.eachContainer?.filter((check) => check.decision === undefined) ?? [];
  if (permission === "token:create" && uncovered.length > 0) {
    const where = uncovered.map((check) => check.container).join(", ");
    return `${permission} denied: a create needs a rule on every container, and no rule of ${application.name} holding it covers ${where}.`;
  }
  if (decision === undefined) {
    if (explanation.sessionId !== undefined) {
      return `${permission} denied: no rule of the session holding it applies to this token.`;
    }
    return `${permission} denied: no rule of ${application.name} holding it covers any of ${containers.join(", ")}.`;
  }
  const within =
    decision.ceiling === undefined
      ? ""
      : ` of the session, within ${name(decision.ceiling.origin, decision.ceiling.rule)} of ${application.name}`;
  return `${permission} allowed by ${name(decision.origin, decision.rule)}${within}: ${decision.transform}.`;
}

/** camelCase inside, snake_case on the wire: converted here and nowhere else. */
export function presentExplanation(explanation: AccessExplanation): ExplanationWire {
  const { decision, passedOver, ceiling } = explanation.result;
  const containers = explanation.containers.join(", ");
  const steps = (trace: readonly PassedOver[]) =>
    trace.map((step) => ({
      ...presentRule(step.ranked.rule, step.ranked.origin),
      reason: step.reason,
      detail: `${name(step.ranked.origin, step.ranked.rule)}: ${REASONS[step.reason](step, explanation.permission, containers)}`,
    }));
  return {
    application: {
      id: explanation.application.id,
      name: explanation.application.name,
      type: explanation.application.type,
    },
    ...(explanation.sessionId !== undefined && { session_id: explanation.sessionId }),
    permission: explanation.permission,
    ...(explanation.tokenId !== undefined && { token_id: explanation.tokenId }),
    containers: [...explanation.containers],
    allowed: explanation.allowed,
    ...(explanation.allowed && decision !== undefined && { transform: decision.transform }),
    ...(decision !== undefined && { decided_by: presentRule(decision.rule, decision.origin) }),
    ...(ceiling !== undefined && {
      ceiling: {
        allowed: ceiling.decision !== undefined,
        ...(ceiling.decision !== undefined && { transform: ceiling.decision.transform }),
        ...(ceiling.decision !== undefined && {
          decided_by: presentRule(ceiling.decision.rule, ceiling.decision.origin),
        }),
        passed_over: steps(ceiling.passedOver),
      },
    }),
    passed_over: steps(passedOver),
    ...(explanation.eachContainer !== undefined && {
      each_container: explanation.eachContainer.map(({ container, decision: each }) => ({
        container,
        allowed: each !== undefined,
        ...(each !== undefined && { decided_by: presentRule(each.rule, each.origin) }),
      })),
    }),
    summary: summary(explanation, decision),
  };
}

export function explainRoutes(service: ExplainService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/access/explain",
      {
        config: { permission: "application:read" },
        schema: {
          tags: ["Access"],
          summary: "Explain an access decision",
          description:
            "Which of an Application's access rules decides a token permission on a token (by id) or on a token " +
            "in the given containers, through the same decision the token routes make: the deciding rule, its " +
            "transform, and every rule tried before it with the reason it did not decide. Never returns token " +
            "data. An explanation for a token id is recorded in the audit log (token.explain).",
          body: ExplainBody,
          response: responses({ 200: ExplanationSchema }),
        },
      },
      async (request) => {
        const { body } = request;
        const explanation = await service.explain(principalOf(request), {
          ...(body.application_id !== undefined && { applicationId: body.application_id }),
          ...(body.session_id !== undefined && { sessionId: body.session_id }),
          permission: body.permission,
          ...(body.token_id !== undefined && { tokenId: body.token_id }),
          ...(body.containers !== undefined && { containers: body.containers }),
        });
        return presentExplanation(explanation);
      },
    );
  };
}
