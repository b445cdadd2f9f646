import { keepPreviousData, useQuery } from "@tanstack/react-query";
import type { AuditEntry, ListLogsInput } from "@tessera/sdk";
import { useMemo, useState, type FormEvent } from "react";
import { AUDIT_ACTIONS, type AuditAction } from "../catalogs";
import { useApplications } from "../components/queries";
import { ChoiceField, Field, formatTime, PagedTable, PageTitle, TextField } from "../components/ui";
import { useSession } from "../session";

interface Filters {
  readonly start: string;
  readonly end: string;
  readonly actor: string;
  readonly action: string;
  readonly token: string;
}

const NONE: Filters = { start: "", end: "", actor: "", action: "", token: "" };

/** datetime-local inputs are local time without a zone; the API takes RFC 3339. */
const instant = (local: string) => (local === "" ? undefined : new Date(local));

export function Audit() {
  const { client } = useSession();
  const [draft, setDraft] = useState<Filters>(NONE);
  const [filters, setFilters] = useState<Filters>(NONE);
  const [page, setPage] = useState(1);
  const input = useMemo((): ListLogsInput => {
    const start = instant(filters.start);
    const end = instant(filters.end);
    return {
      page,
      size: 25,
      ...(start !== undefined && { startDate: start }),
      ...(end !== undefined && { endDate: end }),
      ...(filters.actor.trim() !== "" && { actorId: filters.actor.trim() }),
      ...(filters.action !== "" && { action: filters.action as AuditAction }),
      ...(filters.token.trim() !== "" && { entityType: "token", entityId: filters.token.trim() }),
    };
  }, [filters, page]);
  const logs = useQuery({
    queryKey: ["logs", input],
    queryFn: () => client.logs.list(input),
    placeholderData: keepPreviousData,
  });
  const applications = useApplications();
  const names = new Map((applications.data?.data ?? []).map((app) => [app.id, app.name]));

  function submit(event: FormEvent) {
    event.preventDefault();
    setPage(1);
    setFilters(draft);
  }
  const set = (change: Partial<Filters>) => setDraft({ ...draft, ...change });

  return (
    <>
      <PageTitle>Audit log</PageTitle>
      <form onSubmit={submit} className="filters">
        <TextField
          label="From"
          type="datetime-local"
          value={draft.start}
          onChange={(start) => set({ start })}
        />
        <TextField
          label="Until (exclusive)"
          type="datetime-local"
          value={draft.end}
          onChange={(end) => set({ end })}
        />
        <Field label="Actor (Application)">
          {(props) => (
            <select {...props} value={draft.actor} onChange={(e) => set({ actor: e.target.value })}>
              <option value="">Anyone</option>
              {applications.data?.data.map((app) => (
                <option key={app.id} value={app.id}>
                  {app.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <ChoiceField<string>
          label="Action"
          none="Any"
          choices={AUDIT_ACTIONS}
          value={draft.action}
          onChange={(action) => set({ action })}
        />
        <TextField
          label="Token id"
          spellCheck={false}
          value={draft.token}
          onChange={(token) => set({ token })}
        />
        <div className="actions">
          <button type="submit" className="primary">
            Filter
          </button>
          <button
            type="button"
            onClick={() => {
              setDraft(NONE);
              setFilters(NONE);
              setPage(1);
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <PagedTable
        label="Audit entries"
        caption="Audit entries, newest first"
        columns={["When", "Action", "Actor", "Entity", "Rule", "Details", "Chain"]}
        query={logs}
        page={page}
        onPage={setPage}
        row={(entry) => <Row key={entry.id} entry={entry} names={names} />}
      />
      <section aria-labelledby="chain-title" className="chain">
        <h2 id="chain-title">Chain verification</h2>
        <p>
          Entries are chained per tenant with an HMAC under the tenant&apos;s audit key, which the master key
          wraps. Verifying the chain recomputes every link, so it needs that key: it runs on the server&apos;s
          host with <code>tessera audit verify</code>, not through the API, and the console cannot show its
          result. The <em>Chain</em> column shows each entry&apos;s sequence number once it is sealed (about a
          second after it is written); run verify and keep its printed head to detect tampering or truncation.
        </p>
        {logs.data !== undefined && <p role="status">{sealedSummary(logs.data.data)}</p>}
      </section>
    </>
  );
}

function sealedSummary(entries: readonly AuditEntry[]): string {
  const sealed = entries.filter((e) => e.sequence !== undefined).length;
  return `On this page: ${sealed} sealed, ${entries.length - sealed} waiting to be sealed.`;
}

function Row({ entry, names }: { entry: AuditEntry; names: ReadonlyMap<string, string> }) {
  const actor = entry.actorId === undefined ? "Tessera" : (names.get(entry.actorId) ?? entry.actorId);
  return (
    <tr>
      <td>{formatTime(entry.createdAt)}</td>
      <td>
        <code>{entry.action}</code>
      </td>
      <td>{actor}</td>
      <td>
        {entry.entityType}
        {entry.entityId !== undefined && (
          <>
            {" "}
            <code>{entry.entityId}</code>
          </>
        )}
      </td>
      <td>
        {entry.rule === undefined
          ? "—"
          : `${entry.rule.container} · ${entry.rule.priority} · ${entry.rule.transform}`}
      </td>
      <td>
        <code className="details-json">
          {entry.details === undefined ? "—" : JSON.stringify(entry.details)}
        </code>
      </td>
      <td>{entry.sequence === undefined ? "pending" : `#${entry.sequence}`}</td>
    </tr>
  );
}
