import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { fieldErrors } from "../api";
import { ConfirmButton, formatTime, PageTitle, Problem, SecretReveal, TextField } from "../components/ui";
import { useSession } from "../session";

export function Settings() {
  const { self } = useSession();
  return (
    <>
      <PageTitle>Settings</PageTitle>
      <TenantSection />
      <WebhookSecret />
      {self?.permissions.includes("tenant:create") === true && <Tenants />}
    </>
  );
}

function TenantSection() {
  const { client } = useSession();
  const tenant = useQuery({ queryKey: ["tenant"], queryFn: () => client.tenants.getSelf() });
  return (
    <section aria-labelledby="tenant-title">
      <h2 id="tenant-title">This tenant</h2>
      <Problem error={tenant.error} />
      {tenant.data !== undefined && (
        <dl className="details">
          <dt>Name</dt>
          <dd>{tenant.data.name}</dd>
          <dt>Id</dt>
          <dd>
            <code>{tenant.data.id}</code>
          </dd>
          <dt>Created</dt>
          <dd>{formatTime(tenant.data.createdAt)}</dd>
        </dl>
      )}
    </section>
  );
}

function WebhookSecret() {
  const { client } = useSession();
  const [shown, setShown] = useState(false);
  const secret = useQuery({ queryKey: ["webhook-secret"], queryFn: () => client.webhooks.getSecret() });
  const rotate = useMutation({
    mutationFn: () => client.webhooks.rotateSecret(),
    onSuccess: () => void secret.refetch(),
  });
  return (
    <section aria-labelledby="webhook-title">
      <h2 id="webhook-title">Webhook signing secret</h2>
      <p>
        Signs the webhooks of asynchronous reactor invocations (Standard Webhooks). After a rotation, messages
        carry a signature under both secrets for 24 hours, so receivers can switch without losing one.
      </p>
      <Problem error={secret.error ?? rotate.error} />
      {secret.data !== undefined && (
        <dl className="details">
          <dt>Secret</dt>
          <dd>
            <code data-testid="webhook-secret">{shown ? secret.data.secret : "whsec_••••••••"}</code>{" "}
            <button type="button" onClick={() => setShown(!shown)} aria-pressed={shown}>
              {shown ? "Hide" : "Show"}
            </button>
          </dd>
          <dt>Version</dt>
          <dd>{secret.data.version}</dd>
          <dt>Created</dt>
          <dd>{formatTime(secret.data.createdAt)}</dd>
          {secret.data.previousValidUntil !== undefined && (
            <>
              <dt>Previous secret signs until</dt>
              <dd>{formatTime(secret.data.previousValidUntil)}</dd>
            </>
          )}
        </dl>
      )}
      {rotate.isSuccess && <p role="status">Rotated: version {rotate.data.version}.</p>}
      <ConfirmButton
        label="Rotate secret"
        title="Rotate the webhook signing secret?"
        confirmLabel="Rotate"
        onConfirm={() => rotate.mutate()}
      >
        Receivers should switch to the new secret within 24 hours. Rotating again ends the overlap at once.
      </ConfirmButton>
    </section>
  );
}

/** The bootstrap key alone holds tenant:create; there is no API to list tenants, so only creation is offered. */
function Tenants() {
  const { client } = useSession();
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: (tenantName: string) => client.tenants.create({ name: tenantName }),
  });
  function submit(event: FormEvent) {
    event.preventDefault();
    create.mutate(name.trim());
  }
  return (
    <section aria-labelledby="tenants-title">
      <h2 id="tenants-title">Tenants</h2>
      <p>
        This key may create tenants. Each new tenant gets its own keys and its first management Application,
        whose key is shown once; sign in with it to administer that tenant.
      </p>
      <form onSubmit={submit} className="inline-form">
        <TextField
          label="New tenant's name"
          errors={fieldErrors(create.error).name}
          value={name}
          onChange={setName}
        />
        <button type="submit" disabled={name.trim() === "" || create.isPending}>
          Create tenant
        </button>
      </form>
      <Problem error={create.error} />
      {create.data !== undefined && (
        <SecretReveal label={`Management key of ${create.data.name}`} value={create.data.application.key} />
      )}
    </section>
  );
}
