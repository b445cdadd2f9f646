import { useMutation } from "@tanstack/react-query";
import type { AccessExplanation, Application, TokenPermission } from "@tessera/sdk";
import { useState, type FormEvent } from "react";
import { Link, useSearch } from "wouter";
import { fieldErrors } from "../api";
import { useApplications } from "../components/queries";
import { ChoiceField, commaList, Field, PageTitle, Problem, TextField } from "../components/ui";
import { PERMISSION_DESCRIPTIONS, TOKEN_PERMISSIONS } from "../permissions";
import { useSession } from "../session";

type Rule = NonNullable<AccessExplanation["decidedBy"]>;

function ruleName(rule: Rule): string {
  return rule.source === "rule"
    ? `Rule ${(rule.index ?? 0) + 1} (priority ${rule.priority ?? "?"})`
    : `Top-level ${rule.permissions.join(", ")}`;
}

function where(rule: Rule): string {
  if (rule.container !== undefined) return rule.container;
  return (rule.conditions ?? []).map((c) => `${c.attribute} ${c.operator} ${c.value}`).join(" and ");
}

/** The server's summary, with the rules numbered as the rule editor numbers them (from 1). */
function sentence(explanation: AccessExplanation): string {
  const rule = explanation.decidedBy;
  if (!explanation.allowed || rule === undefined) return explanation.summary;
  return `${explanation.permission} allowed by ${ruleName(rule)}: ${explanation.transform ?? rule.transform}.`;
}

const SUBJECTS = [
  ["token", "a token"],
  ["containers", "a token in containers"],
] as const;

export function Explain() {
  const { client } = useSession();
  const params = new URLSearchParams(useSearch());
  const [applicationId, setApplicationId] = useState(params.get("application") ?? "");
  const [permission, setPermission] = useState<TokenPermission>(
    (params.get("permission") as TokenPermission | null) ?? "token:read",
  );
  const [subject, setSubject] = useState<"token" | "containers">(
    params.has("containers") ? "containers" : "token",
  );
  const [tokenId, setTokenId] = useState(params.get("token") ?? "");
  const [containers, setContainers] = useState(params.get("containers") ?? "/");

  const applications = useApplications();
  const explain = useMutation({
    mutationFn: () =>
      client.access.explain({
        applicationId,
        permission,
        ...(subject === "token" ? { tokenId: tokenId.trim() } : { containers: commaList(containers) }),
      }),
  });
  const errors = fieldErrors(explain.error);
  const application = applications.data?.data.find((a) => a.id === applicationId);

  function submit(event: FormEvent) {
    event.preventDefault();
    explain.mutate();
  }

  return (
    <>
      <PageTitle>Access explainer</PageTitle>
      <p>
        Why does a key see a token as it does? Pick an Application and a token (or the containers a token
        would lie in): the server runs the same decision its token routes make and shows which rule decides,
        and why every rule before it did not. It never returns token data.
      </p>
      <form onSubmit={submit} className="explain-form">
        <Field label="Application" errors={errors.application_id}>
          {(props) => (
            <select
              {...props}
              required
              value={applicationId}
              onChange={(event) => setApplicationId(event.target.value)}
            >
              <option value="">Choose an Application…</option>
              {/* The Application a link filled in, by its id, while the list has not arrived or when it is not
                  among the first 100: without an option of its value the select would show the prompt and,
                  being required, refuse to submit. */}
              {applicationId !== "" && application === undefined && (
                <option value={applicationId}>{applicationId}</option>
              )}
              {applications.data?.data.map((app) => (
                <option key={app.id} value={app.id}>
                  {app.name} ({app.type})
                </option>
              ))}
            </select>
          )}
        </Field>
        <ChoiceField
          label="Permission"
          hint={PERMISSION_DESCRIPTIONS[permission]}
          errors={errors.permission}
          choices={TOKEN_PERMISSIONS}
          value={permission}
          onChange={setPermission}
        />
        <fieldset className="inline">
          <legend>For</legend>
          {SUBJECTS.map(([value, label]) => (
            <label key={value} className="check">
              <input
                type="radio"
                name="subject"
                checked={subject === value}
                onChange={() => setSubject(value)}
              />
              {label}
            </label>
          ))}
        </fieldset>
        {subject === "token" ? (
          <TextField
            label="Token id"
            errors={errors.token_id}
            spellCheck={false}
            value={tokenId}
            onChange={setTokenId}
          />
        ) : (
          <TextField
            label="Containers"
            hint="Comma-separated, like /pci/high/, /pii/"
            errors={[
              ...(errors.containers ?? []),
              ...Object.entries(errors)
                .filter(([field]) => field.startsWith("containers["))
                .flatMap(([field, messages]) => messages.map((m) => `${field}: ${m}`)),
            ]}
            spellCheck={false}
            value={containers}
            onChange={setContainers}
          />
        )}
        <button type="submit" className="primary" disabled={applicationId === "" || explain.isPending}>
          Explain
        </button>
      </form>
      <Problem error={explain.error} fields={false} />
      {explain.data !== undefined && <Verdict explanation={explain.data} application={application} />}
    </>
  );
}

function Verdict({
  explanation,
  application,
}: {
  explanation: AccessExplanation;
  application?: Application;
}) {
  const decided = explanation.decidedBy;
  const passed = new Map(
    explanation.passedOver.filter((r) => r.source === "rule").map((r) => [r.index ?? -1, r] as const),
  );
  return (
    <section aria-labelledby="verdict" className={explanation.allowed ? "verdict allowed" : "verdict denied"}>
      <h2 id="verdict">
        {explanation.allowed ? `Allowed: ${explanation.transform ?? "allowed"}` : "Denied"}
      </h2>
      <p data-testid="summary">{sentence(explanation)}</p>
      <p className="hint">
        {explanation.application.name} · {explanation.permission} ·{" "}
        {explanation.tokenId !== undefined && (
          <>
            token <code>{explanation.tokenId}</code> in{" "}
          </>
        )}
        {explanation.containers.join(", ")}
      </p>
      {decided !== undefined && (
        <div className="decided">
          <h3>Deciding rule</h3>
          <p>
            <strong>{ruleName(decided)}</strong>: {where(decided)} · {decided.transform} ·{" "}
            {decided.permissions.join(", ")}
            {decided.description !== undefined && <> · {decided.description}</>}
          </p>
        </div>
      )}
      <h3>Rules tried before it</h3>
      {explanation.passedOver.length === 0 ? (
        <p>None: the first rule tried decided.</p>
      ) : (
        <ol className="trace">
          {explanation.passedOver.map((rule, i) => (
            <li key={i}>
              <strong>{ruleName(rule)}</strong> ({where(rule)}, {rule.transform}): passed over,{" "}
              {rule.detail.replace(/^[^:]*: /, "")}
            </li>
          ))}
        </ol>
      )}
      {explanation.eachContainer !== undefined && (
        <>
          <h3>Each container (a write needs a rule on every one)</h3>
          <ul>
            {explanation.eachContainer.map((check) => (
              <li key={check.container}>
                <code>{check.container}</code>:{" "}
                {check.allowed && check.decidedBy !== undefined
                  ? `allowed by ${ruleName(check.decidedBy)}`
                  : "no rule"}
              </li>
            ))}
          </ul>
        </>
      )}
      {application !== undefined && application.rules.length > 0 && (
        <>
          <h3>All rules of {application.name}, in the order they are tried</h3>
          <ol className="all-rules">
            {application.rules.map((rule, index) => {
              const state =
                decided?.source === "rule" && decided.index === index
                  ? "decides"
                  : passed.has(index)
                    ? "passed over"
                    : "not reached";
              return (
                <li key={index} className={state.replace(" ", "-")}>
                  {rule.container ?? "conditions"} · {rule.transform} · {rule.permissions.join(", ")} —{" "}
                  <strong>{state}</strong>
                </li>
              );
            })}
          </ol>
          <p>
            <Link href={`/applications/${application.id}`}>Edit {application.name}&apos;s rules</Link>
          </p>
        </>
      )}
    </section>
  );
}
