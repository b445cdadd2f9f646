import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { Application, ApplicationType, ApplicationWithKey, Permission } from "@tessera/sdk";
import { useState, type FormEvent } from "react";
import { Link, useLocation } from "wouter";
import { fieldErrors } from "../api";
import { RuleEditor, ruleDrafts, rulesOf, type RuleDraft } from "../components/rule-editor";
import { EditPage } from "../components/queries";
import {
  ConfirmButton,
  Field,
  formatTime,
  PageTitle,
  Problem,
  SecretReveal,
  TextField,
} from "../components/ui";
import { isTokenPermission, PERMISSION_DESCRIPTIONS, PERMISSIONS_OF } from "../permissions";
import { useSession, useSessionApi } from "../session";

export function ApplicationEdit({ id }: { id?: string }) {
  const { client } = useSession();
  return (
    <EditPage title="Application" queryKey="application" id={id} load={(i) => client.applications.get(i)}>
      {(application, formKey) => <ApplicationForm key={formKey} application={application} />}
    </EditPage>
  );
}

function ApplicationForm({ application }: { application: Application | undefined }) {
  const { client } = useSession();
  const { adoptDataKey } = useSessionApi();
  const queries = useQueryClient();
  const [, navigate] = useLocation();
  const [name, setName] = useState(application?.name ?? "");
  const [type, setType] = useState<ApplicationType>(application?.type ?? "private");
  const [permissions, setPermissions] = useState<Permission[]>(application?.permissions ?? []);
  const [rules, setRules] = useState<RuleDraft[]>(() =>
    application === undefined ? [] : ruleDrafts(application.rules),
  );
  const [expiresAt, setExpiresAt] = useState("");
  const [issued, setIssued] = useState<ApplicationWithKey | undefined>(undefined);
  const [saved, setSaved] = useState<string | undefined>(undefined);

  const allowed = PERMISSIONS_OF[type];
  const tokenPermissions = allowed.filter(isTokenPermission);

  const save = useMutation({
    mutationFn: async () => {
      const body = {
        name: name.trim(),
        permissions: permissions.filter((p) => allowed.includes(p)),
        rules: type === "management" ? [] : rulesOf(rules),
      };
      if (application !== undefined)
        return { updated: await client.applications.update(application.id, body) };
      return {
        created: await client.applications.create({
          ...body,
          type,
          ...(expiresAt !== "" && { expiresAt: new Date(expiresAt) }),
        }),
      };
    },
    onSuccess: async (result) => {
      await queries.invalidateQueries({ queryKey: ["applications"] });
      if ("created" in result) {
        setIssued(result.created);
      } else {
        queries.setQueryData(["application", result.updated.id], result.updated);
        setSaved(`Saved ${result.updated.name}.`);
      }
    },
  });

  const regenerate = useMutation({
    mutationFn: () => client.applications.regenerateKey(application?.id ?? ""),
    onSuccess: (result) => setIssued(result),
  });
  const remove = useMutation({
    mutationFn: () => client.applications.delete(application?.id ?? ""),
    onSuccess: async () => {
      await queries.invalidateQueries({ queryKey: ["applications"] });
      navigate("/applications");
    },
  });

  const errors = fieldErrors(save.error);

  if (issued !== undefined) {
    return (
      <>
        <PageTitle>{application === undefined ? "Application created" : "Key regenerated"}</PageTitle>
        <SecretReveal label={`The key of ${issued.name}`} value={issued.key}>
          {issued.type === "private" && (
            <p>
              <button
                type="button"
                onClick={() => {
                  adoptDataKey(issued.key, { id: issued.id, name: issued.name });
                  navigate("/tokens");
                }}
              >
                Use this key for the token pages and reactor invocations in this tab
              </button>
            </p>
          )}
        </SecretReveal>
        <p>
          {application === undefined ? (
            <Link href={`/applications/${issued.id}`}>Open {issued.name}</Link>
          ) : (
            <button type="button" className="link" onClick={() => setIssued(undefined)}>
              Back to {issued.name}
            </button>
          )}{" "}
          · <Link href="/applications">All Applications</Link>
        </p>
      </>
    );
  }

  function submit(event: FormEvent) {
    event.preventDefault();
    setSaved(undefined);
    save.mutate();
  }

  return (
    <>
      <PageTitle>{application === undefined ? "New Application" : application.name}</PageTitle>
      {application !== undefined && (
        <p className="hint">
          {application.type} · created {formatTime(application.createdAt)} · expires{" "}
          {application.expiresAt === undefined ? "never" : formatTime(application.expiresAt)} ·{" "}
          <Link href={`/explain?application=${application.id}`}>Explain its access</Link>
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <TextField label="Name" errors={errors.name} required value={name} onChange={setName} />
        {application === undefined && (
          <Field label="Type" hint="Fixed once created." errors={errors.type}>
            {(props) => (
              <select
                {...props}
                value={type}
                onChange={(event) => setType(event.target.value as ApplicationType)}
              >
                <option value="private">private: a backend holding token permissions</option>
                <option value="public">public: browsers and apps, create and update only</option>
                <option value="management">management: administers the tenant, never sees tokens</option>
              </select>
            )}
          </Field>
        )}
        <fieldset className="permissions">
          <legend>Top-level permissions</legend>
          <p className="hint">
            {type === "management"
              ? "Management permissions administer the tenant."
              : "A token permission held here applies to every container, after all the rules: masked, except token:use, which reveals."}
          </p>
          {allowed.map((permission) => (
            <label key={permission} className="check">
              <input
                type="checkbox"
                checked={permissions.includes(permission)}
                onChange={(event) =>
                  setPermissions(
                    event.target.checked
                      ? [...permissions, permission]
                      : permissions.filter((p) => p !== permission),
                  )
                }
              />
              <span>
                <code>{permission}</code> <span className="hint">{PERMISSION_DESCRIPTIONS[permission]}</span>
              </span>
            </label>
          ))}
          {errors.permissions !== undefined && <p className="field-error">{errors.permissions.join("; ")}</p>}
        </fieldset>
        {type !== "management" && (
          <RuleEditor rules={rules} onChange={setRules} allowed={tokenPermissions} errors={errors} />
        )}
        {application === undefined && (
          <TextField
            label="Expires at (optional)"
            hint="The key stops working then and the Application is deleted. It can be set only when creating."
            errors={errors.expires_at}
            type="datetime-local"
            value={expiresAt}
            onChange={setExpiresAt}
          />
        )}
        {save.error !== null && <Problem error={save.error} />}
        <p role="status">{saved}</p>
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            {application === undefined ? "Create Application" : "Save changes"}
          </button>
        </div>
      </form>
      {application !== undefined && (
        <section aria-labelledby="key-actions" className="danger-zone">
          <h2 id="key-actions">Key and deletion</h2>
          <Problem error={regenerate.error ?? remove.error} />
          <div className="actions">
            <ConfirmButton
              label="Regenerate key"
              title={`Regenerate the key of ${application.name}?`}
              confirmLabel="Regenerate"
              onConfirm={() => regenerate.mutate()}
            >
              The current key stops working at once; the new one is shown once.
            </ConfirmButton>
            <ConfirmButton
              label="Delete Application"
              title={`Delete ${application.name}?`}
              confirmLabel="Delete"
              danger
              onConfirm={() => remove.mutate()}
            >
              Its key stops working at once. This cannot be undone.
            </ConfirmButton>
          </div>
        </section>
      )}
    </>
  );
}
