import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useLocation } from "wouter";
import { DataKeyGate } from "../components/data-key";
import { ConfirmButton, formatTime, PageTitle, Pending, Problem } from "../components/ui";
import type { DataKey } from "../session";
import { shownData } from "./tokens";

export function TokenDetail({ id }: { id: string }) {
  const tokenId = decodeURIComponent(id);
  return (
    <>
      <PageTitle>Token</PageTitle>
      <DataKeyGate purpose="the token pages">{(key) => <Detail dataKey={key} id={tokenId} />}</DataKeyGate>
    </>
  );
}

function Detail({ dataKey, id }: { dataKey: DataKey; id: string }) {
  const queries = useQueryClient();
  const [, navigate] = useLocation();
  const token = useQuery({ queryKey: ["data", "token", id], queryFn: () => dataKey.client.tokens.get(id) });
  const remove = useMutation({
    mutationFn: () => dataKey.client.tokens.delete(id),
    onSuccess: async () => {
      await queries.invalidateQueries({ queryKey: ["data"] });
      navigate("/tokens");
    },
  });
  const explainHref = `/explain?token=${encodeURIComponent(id)}${
    dataKey.application === undefined ? "" : `&application=${dataKey.application.id}`
  }`;
  if (token.data === undefined) {
    return <Pending query={token} />;
  }
  const t = token.data;
  return (
    <>
      <dl className="details">
        <dt>Id</dt>
        <dd>
          <code>{t.id}</code>
        </dd>
        <dt>Type</dt>
        <dd>{t.type}</dd>
        <dt>Data as this key&apos;s rule shows it</dt>
        <dd>
          <code data-testid="token-data">{shownData(t)}</code>
        </dd>
        <dt>Containers</dt>
        <dd>{t.containers.join(", ")}</dd>
        <dt>Metadata</dt>
        <dd>
          <code>{JSON.stringify(t.metadata ?? {})}</code>
        </dd>
        <dt>Fingerprint</dt>
        <dd>
          <code>{t.fingerprint ?? "—"}</code>
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(t.createdAt)}</dd>
        <dt>Expires</dt>
        <dd>{t.expiresAt === undefined ? "never" : formatTime(t.expiresAt)}</dd>
      </dl>
      <p>
        <Link href={explainHref}>Explain why this key sees it so</Link>
      </p>
      <Problem error={remove.error} />
      <ConfirmButton
        label="Delete token"
        title="Delete this token?"
        confirmLabel="Delete"
        danger
        onConfirm={() => remove.mutate()}
      >
        The token and everything indexed about it are deleted. This cannot be undone.
      </ConfirmButton>
    </>
  );
}
