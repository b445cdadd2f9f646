import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { AcceptedInvocation, Invocation, Reactor } from "@tessera/sdk";
import { lazy, Suspense, useId, useMemo, useRef, useState, type FormEvent } from "react";
import { Link, useLocation } from "wouter";
import { fieldErrors } from "../api";
import type { CodeEditorHandle, CodeMark } from "../components/code-editor";
import { DataKeyGate } from "../components/data-key";
import { EditPage, useApplications } from "../components/queries";
import {
  ConfirmButton,
  DataTable,
  Field,
  formatTime,
  PageTitle,
  Problem,
  TextAreaField,
  TextField,
} from "../components/ui";
import type { DataKey } from "../session";
import { useSession } from "../session";

// CodeMirror comes with the editor, in a chunk of its own, when a reactor is opened.
const CodeEditor = lazy(() => import("../components/code-editor"));

const STARTER = `module.exports = async function ({ args, configuration }) {
  return { raw: { received: args } };
};
`;

/** "Unexpected token ';' (line 1, column 11)": the server's save-time check of the code, as editor marks. */
export function codeMarks(messages: readonly string[] | undefined): CodeMark[] {
  return (messages ?? []).map((message) => {
    const where = /\(line (\d+)(?:, column (\d+))?\)$/.exec(message);
    if (where === null) return { message, line: 1 };
    return { message, line: Number(where[1]), ...(where[2] !== undefined && { column: Number(where[2]) }) };
  });
}

export default function ReactorEdit({ id }: { id?: string }) {
  const { client } = useSession();
  return (
    <EditPage title="Reactor" queryKey="reactor" id={id} load={(i) => client.reactors.get(i)}>
      {(reactor, formKey) => (
        <>
          <ReactorForm key={formKey} reactor={reactor} />
          {reactor !== undefined && (
            <DataKeyGate purpose="invocations">
              {(key) => <Invoke reactor={reactor} dataKey={key} />}
            </DataKeyGate>
          )}
        </>
      )}
    </EditPage>
  );
}

interface Row {
  readonly key: number;
  readonly name: string;
  readonly value: string;
}

function ReactorForm({ reactor }: { reactor: Reactor | undefined }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const [, navigate] = useLocation();
  const codeErrorId = useId();
  const editor = useRef<CodeEditorHandle>(null);
  const [name, setName] = useState(reactor?.name ?? "");
  const [code, setCode] = useState(reactor?.code ?? STARTER);
  const [applicationId, setApplicationId] = useState(reactor?.applicationId ?? "");
  const [rows, setRows] = useState<Row[]>(() =>
    Object.entries(reactor?.configuration ?? {}).map(([n, v], i) => ({ key: i, name: n, value: v })),
  );
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const applications = useApplications();

  const save = useMutation({
    mutationFn: async () => {
      const body = {
        name: name.trim(),
        code,
        configuration: Object.fromEntries(rows.filter((r) => r.name !== "").map((r) => [r.name, r.value])),
        ...(applicationId !== "" && { application: { id: applicationId } }),
      };
      return reactor === undefined ? client.reactors.create(body) : client.reactors.update(reactor.id, body);
    },
    onSuccess: async (result) => {
      await queries.invalidateQueries({ queryKey: ["reactors"] });
      if (reactor === undefined) navigate(`/reactors/${result.id}`);
      else {
        queries.setQueryData(["reactor", result.id], result);
        setSaved(`Saved ${result.name}.`);
      }
    },
  });
  const remove = useMutation({
    mutationFn: () => client.reactors.delete(reactor?.id ?? ""),
    onSuccess: async () => {
      await queries.invalidateQueries({ queryKey: ["reactors"] });
      navigate("/reactors");
    },
  });
  const errors = fieldErrors(save.error);
  const marks = useMemo(() => codeMarks(errors.code), [errors.code]);
  const configurationErrors = Object.entries(errors).filter(([field]) => field.startsWith("configuration"));
  const change = (key: number, edit: Partial<Row>) =>
    setRows(rows.map((r) => (r.key === key ? { ...r, ...edit } : r)));

  function submit(event: FormEvent) {
    event.preventDefault();
    setSaved(undefined);
    save.mutate();
  }

  return (
    <>
      <PageTitle>{reactor === undefined ? "New reactor" : reactor.name}</PageTitle>
      {reactor !== undefined && (
        <p className="hint">
          Created {formatTime(reactor.createdAt)}
          {reactor.modifiedAt !== undefined && <> · changed {formatTime(reactor.modifiedAt)}</>} ·{" "}
          <Link href="/reactors">All reactors</Link>
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <TextField label="Name" errors={errors.name} value={name} onChange={setName} />
        <div className="field">
          <span className="label" aria-hidden="true">
            Code
          </span>
          <Suspense fallback={<p role="status">Loading the editor…</p>}>
            <CodeEditor
              ref={editor}
              value={code}
              onChange={setCode}
              marks={marks}
              label="Code"
              {...(marks.length > 0 && {
                description: marks.map((m) => `line ${m.line}: ${m.message}`).join("; "),
              })}
            />
          </Suspense>
          {marks.length > 0 && (
            <ul id={codeErrorId} className="field-error" role="alert" data-testid="code-errors">
              {marks.map((mark, i) => (
                <li key={i}>
                  <button type="button" className="link" onClick={() => editor.current?.jumpTo(mark)}>
                    Line {mark.line}
                    {mark.column !== undefined && `, column ${mark.column}`}
                  </button>
                  : {mark.message}
                </li>
              ))}
            </ul>
          )}
        </div>
        <fieldset className="configuration">
          <legend>Configuration</legend>
          <p className="hint">
            Names and values handed to the code as <code>configuration</code>; stored encrypted, never in its
            logs.
          </p>
          {rows.map((row, i) => (
            <div className="row" key={row.key}>
              <input
                aria-label={`Configuration ${i + 1} name`}
                value={row.name}
                spellCheck={false}
                onChange={(event) => change(row.key, { name: event.target.value })}
              />
              <input
                aria-label={`Configuration ${i + 1} value`}
                value={row.value}
                spellCheck={false}
                onChange={(event) => change(row.key, { value: event.target.value })}
              />
              <button type="button" onClick={() => setRows(rows.filter((r) => r.key !== row.key))}>
                Remove {row.name === "" ? `row ${i + 1}` : row.name}
              </button>
            </div>
          ))}
          <button
            type="button"
            onClick={() =>
              setRows([...rows, { key: Math.max(0, ...rows.map((r) => r.key)) + 1, name: "", value: "" }])
            }
          >
            Add a setting
          </button>
          {configurationErrors.length > 0 && (
            <p className="field-error">
              {configurationErrors.map(([field, messages]) => `${field}: ${messages.join("; ")}`).join(" · ")}
            </p>
          )}
        </fieldset>
        <Field
          label="Application (optional)"
          hint="What the code's svc client acts as; without one, svc is null."
          errors={errors["application.id"]}
        >
          {(props) => (
            <select
              {...props}
              value={applicationId}
              onChange={(event) => setApplicationId(event.target.value)}
            >
              <option value="">None</option>
              {applications.data?.data
                .filter((app) => app.type !== "management")
                .map((app) => (
                  <option key={app.id} value={app.id}>
                    {app.name} ({app.type})
                  </option>
                ))}
            </select>
          )}
        </Field>
        {save.error !== null && marks.length === 0 && <Problem error={save.error} />}
        <p role="status">{saved}</p>
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            {reactor === undefined ? "Create reactor" : "Save changes"}
          </button>
          {reactor !== undefined && (
            <ConfirmButton
              label="Delete reactor"
              title={`Delete ${reactor.name}?`}
              confirmLabel="Delete"
              danger
              onConfirm={() => remove.mutate()}
            >
              Its code and configuration are deleted. This cannot be undone.
            </ConfirmButton>
          )}
        </div>
        <Problem error={remove.error} />
      </form>
    </>
  );
}

function Invoke({ reactor, dataKey }: { reactor: Reactor; dataKey: DataKey }) {
  const queries = useQueryClient();
  const [args, setArgs] = useState("{}");
  const [invalid, setInvalid] = useState<string | undefined>(undefined);
  const [callbackUrl, setCallbackUrl] = useState("");
  const [timeoutMs, setTimeoutMs] = useState("10000");
  const [lookup, setLookup] = useState("");
  const invocationsKey = ["data", "invocations", reactor.id];
  const started = useQuery<string[]>({ queryKey: invocationsKey, queryFn: () => [], staleTime: Infinity });

  const react = useMutation({
    mutationFn: (parsed: unknown): Promise<{ sync: unknown } | { accepted: AcceptedInvocation }> =>
      callbackUrl.trim() === ""
        ? dataKey.client.reactors.react(reactor.id, { args: parsed }).then((result) => ({ sync: result }))
        : dataKey.client.reactors
            .reactAsync(reactor.id, {
              args: parsed,
              callbackUrl: callbackUrl.trim(),
              timeoutMs: Number(timeoutMs),
            })
            .then((accepted) => {
              queries.setQueryData<string[]>(invocationsKey, (ids = []) => [accepted.id, ...ids]);
              return { accepted };
            }),
  });

  function submit(event: FormEvent) {
    event.preventDefault();
    setInvalid(undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(args) as unknown;
    } catch (error) {
      setInvalid(`The arguments are not JSON: ${(error as Error).message}`);
      return;
    }
    react.mutate(parsed);
  }

  return (
    <section aria-labelledby="invoke-title">
      <h2 id="invoke-title">Invoke</h2>
      <form onSubmit={submit}>
        <TextAreaField
          label="Arguments (JSON)"
          hint="{{ token_id }} anywhere in them is replaced by the token's data on the server, if the key may use it."
          errors={[...(invalid === undefined ? [] : [invalid]), ...(fieldErrors(react.error).args ?? [])]}
          className="json"
          rows={4}
          value={args}
          onChange={setArgs}
        />
        <TextField
          label="Callback URL (optional: invoke asynchronously)"
          hint="The outcome is POSTed there as a signed webhook; the invocation is listed below."
          errors={fieldErrors(react.error).callback_url}
          type="url"
          value={callbackUrl}
          onChange={setCallbackUrl}
        />
        {callbackUrl.trim() !== "" && (
          <TextField
            label="Timeout (ms)"
            errors={fieldErrors(react.error).timeout_ms}
            type="number"
            min={10000}
            max={210000}
            value={timeoutMs}
            onChange={setTimeoutMs}
          />
        )}
        <button type="submit" className="primary" disabled={react.isPending}>
          Invoke
        </button>
      </form>
      <Problem error={react.error} />
      {react.data !== undefined && "sync" in react.data && (
        <div className="result" role="status">
          <h3>Result</h3>
          <pre data-testid="react-result">{JSON.stringify(react.data.sync, null, 2)}</pre>
        </div>
      )}
      <h3>Asynchronous invocations</h3>
      <p className="hint">
        Those started in this tab, and any other of this key&apos;s by id: only the Application that started
        an invocation may read it.
      </p>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          if (lookup.trim() === "") return;
          queries.setQueryData<string[]>(invocationsKey, (ids = []) => [
            lookup.trim(),
            ...ids.filter((i) => i !== lookup.trim()),
          ]);
          setLookup("");
        }}
      >
        <label htmlFor="invocation-id">Invocation id</label>
        <input
          id="invocation-id"
          spellCheck={false}
          value={lookup}
          onChange={(event) => setLookup(event.target.value)}
        />
        <button type="submit">Look up</button>
      </form>
      {(started.data ?? []).map((invocationId) => (
        <InvocationView key={invocationId} dataKey={dataKey} reactorId={reactor.id} id={invocationId} />
      ))}
    </section>
  );
}

const SETTLED = new Set(["completed", "failed"]);

function InvocationView({ dataKey, reactorId, id }: { dataKey: DataKey; reactorId: string; id: string }) {
  const invocation = useQuery({
    queryKey: ["data", "invocation", reactorId, id],
    queryFn: () => dataKey.client.reactors.getInvocation(reactorId, id),
    // Until it has run and its webhook is settled.
    refetchInterval: (query) => (settled(query.state.data) ? false : 1_000),
  });
  const data = invocation.data;
  return (
    <article className="invocation" aria-label={`Invocation ${id}`}>
      <h4>
        <code>{id}</code>: {data?.status ?? (invocation.isPending ? "loading…" : "unknown")}
      </h4>
      <Problem error={invocation.error} />
      {data !== undefined && (
        <>
          <p className="hint">
            Created {formatTime(data.createdAt)} · {data.runAttempts} run attempt(s) · callback{" "}
            <code>{data.callbackUrl}</code>
          </p>
          {(data.result !== undefined || data.error !== undefined || data.response !== undefined) && (
            <pre>{JSON.stringify(data.result ?? data.response ?? data.error, null, 2)}</pre>
          )}
          {data.delivery !== undefined && (
            <DataTable
              label="Webhook delivery attempts"
              caption={`Webhook delivery: ${data.delivery.status}`}
              showCaption
              columns={["Attempt", "At", "Answer", "Took"]}
            >
              {data.delivery.attempts.map((attempt) => (
                <tr key={attempt.attempt}>
                  <td>{attempt.attempt}</td>
                  <td>{formatTime(attempt.attemptedAt)}</td>
                  <td>{attempt.responseStatus ?? attempt.error ?? "—"}</td>
                  <td>{attempt.durationMs} ms</td>
                </tr>
              ))}
            </DataTable>
          )}
        </>
      )}
    </article>
  );
}

function settled(invocation: Invocation | undefined): boolean {
  if (invocation === undefined) return false;
  return SETTLED.has(invocation.status) && invocation.delivery?.status !== "pending";
}
