import { keepPreviousData, useQuery } from "@tanstack/react-query";
import type { AuditEntry, ListLogsInput } from "@tessera/sdk";
import { useMemo, useState, type FormEvent } from "react";
import { Field, formatTime, PageTitle, Pager, Problem, TableWrap } from "../components/ui";
import { useSession } from "../session";

type Action = NonNullable<ListLogsInput["action"]>;

const ACTIONS: readonly Action[] = [
  "token.create",
  "token.read",
  "token.list",
  "token.update",
  "token.delete",
  "token.search",
  "token.detokenize",
  "token.explain",
  "reactor.create",
  "reactor.update",
  "reactor.delete",
  "reactor.react",
  "reactor.react_async",
  "application.create",
  "application.update",
  "application.regenerate_key",
  "application.delete",
  "tenant.create",
  "tenant.rotate_data_key",
  "webhook.rotate_secret",
];

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
      ...(filters.action !== "" && { action: filters.action as Action }),
      ...(filters.token.trim() !== "" && { entityType: "token", entityId: filters.token.trim() }),
    };
  }, [filters, page]);
  const logs = useQuery({
    queryKey: ["logs", input],
    queryFn: () => client.logs.list(input),
    placeholderData: keepPreviousData,
  });
  const applications = useQuery({
    queryKey: ["applications", "all"],
    queryFn: () => client.applications.list({ size: 100 }),
  });
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
        <Field label="From">
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              value={draft.start}
              onChange={(e) => set({ start: e.target.value })}
            />
          )}
        </Field>
        <Field label="Until (exclusive)">
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              value={draft.end}
              onChange={(e) => set({ end: e.target.value })}
            />
          )}
        </Field>
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
        <Field label="Action">
          {(props) => (
            <select {...props} value={draft.action} onChange={(e) => set({ action: e.target.value })}>
              <option value="">Any</option>
              {ACTIONS.map((action) => (
                <option key={action}>{action}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Token id">
          {(props) => (
            <input
              {...props}
              spellCheck={false}
              value={draft.token}
              onChange={(e) => set({ token: e.target.value })}
            />
          )}
        </Field>
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
      <Problem error={logs.error} />
      {logs.data !== undefined && (
        <>
          <TableWrap label="Audit entries">
            <table>
              <caption className="visually-hidden">Audit entries, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Action</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Entity</th>
                  <th scope="col">Rule</th>
                  <th scope="col">Details</th>
                  <th scope="col">Chain</th>
                </tr>
              </thead>
              <tbody>
                {logs.data.data.map((entry) => (
                  <Row key={entry.id} entry={entry} names={names} />
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager
            page={page}
            totalPages={logs.data.pagination.totalPages}
            totalItems={logs.data.pagination.totalItems}
            onPage={setPage}
          />
        </>
      )}
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
