import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { Token, TokenType } from "@tessera/sdk";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { Link, useLocation } from "wouter";
import { fieldErrors } from "../api";
import { DataKeyGate } from "../components/data-key";
import { TOKEN_TYPES } from "../catalogs";
import {
  ChoiceField,
  commaList,
  formatTime,
  PagedTable,
  PageTitle,
  Problem,
  TextAreaField,
  TextField,
} from "../components/ui";
import type { DataKey } from "../session";

export function Tokens() {
  return (
    <>
      <PageTitle>Tokens</PageTitle>
      <DataKeyGate purpose="the token pages">
        {(key) => (
          <>
            <Search dataKey={key} />
            <CreateToken dataKey={key} />
          </>
        )}
      </DataKeyGate>
    </>
  );
}

/** "Unknown field foo (at offset 12)": the server's message and where in the query it points. */
export function queryProblem(messages: readonly string[] | undefined) {
  const message = messages?.[0];
  if (message === undefined) return undefined;
  const offset = /\(at offset (\d+)\)$/.exec(message);
  return { message, offset: offset === null ? undefined : Number(offset[1]) };
}

/** How the data looks under the key's rule: shown, or absent when redacted (or masked without a mask). */
export function shownData(token: Token): string {
  if (!("data" in token) || token.data === undefined) return "— (not shown)";
  return typeof token.data === "string" ? token.data : JSON.stringify(token.data);
}

function Search({ dataKey }: { dataKey: DataKey }) {
  const [text, setText] = useState("");
  const [query, setQuery] = useState<string | undefined>(undefined);
  const [page, setPage] = useState(1);
  const input = useRef<HTMLTextAreaElement>(null);
  const search = useQuery({
    queryKey: ["data", "search", query, page],
    queryFn: () => dataKey.client.tokens.search({ query: query ?? "", page, size: 20 }),
    enabled: query !== undefined,
    placeholderData: keepPreviousData,
  });
  const problem = queryProblem(fieldErrors(search.error).query);

  function submit(event: FormEvent) {
    event.preventDefault();
    setPage(1);
    setQuery(text);
  }

  // Put the caret where the server says the query goes wrong.
  const offset = problem?.offset;
  useEffect(() => {
    if (offset === undefined) return;
    input.current?.focus();
    input.current?.setSelectionRange(offset, offset);
  }, [offset, search.errorUpdatedAt]);

  return (
    <section aria-labelledby="search-title">
      <h2 id="search-title">Search</h2>
      <form onSubmit={submit}>
        <div className="field">
          <label htmlFor="query">Query</label>
          <textarea
            id="query"
            ref={input}
            className="query"
            rows={2}
            spellCheck={false}
            value={text}
            placeholder='type:card_number AND container:"/pci/*"'
            onChange={(event) => setText(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === "Enter" && !event.shiftKey) {
                event.preventDefault();
                event.currentTarget.form?.requestSubmit();
              }
            }}
            aria-describedby={problem === undefined ? "query-help" : "query-help query-error"}
            {...(problem !== undefined && { "aria-invalid": true })}
          />
          {problem !== undefined && (
            <div id="query-error" role="alert" className="query-error">
              {problem.offset !== undefined && (
                <pre aria-hidden="true" data-testid="query-caret">
                  {query}
                  {"\n"}
                  {" ".repeat(problem.offset)}^
                </pre>
              )}
              <span>{problem.message}</span>
            </div>
          )}
        </div>
        <details id="query-help">
          <summary>Query syntax</summary>
          <ul>
            <li>
              <code>field:value</code> terms; side by side means AND. <code>AND</code>, <code>OR</code>,{" "}
              <code>NOT</code> (or <code>-</code>) in capitals, and parentheses.
            </li>
            <li>
              Fields: <code>id</code>, <code>type</code>, <code>data</code>, <code>fingerprint</code>,{" "}
              <code>container</code>, <code>metadata.&lt;key&gt;</code>, <code>created_by</code>,{" "}
              <code>modified_by</code>, <code>created_at</code>, <code>modified_at</code>.
            </li>
            <li>
              Quote values with spaces: <code>metadata.customer:&quot;ACME (EU)&quot;</code>. A container
              subtree: <code>container:&quot;/pci/*&quot;</code>.
            </li>
            <li>
              Dates: <code>created_at:[2024-01-01 TO *]</code>, <code>{"{"}</code> and <code>{"}"}</code>{" "}
              exclude the bound.
            </li>
            <li>
              <code>data:</code> matches a search index of the data exactly, case-insensitively.
            </li>
          </ul>
        </details>
        <button type="submit" className="primary">
          Search
        </button>
      </form>
      {problem === undefined && (
        <PagedTable
          label="Tokens found"
          caption="Tokens found"
          columns={["Id", "Type", "Data as shown", "Containers", "Created"]}
          empty="No token matches."
          query={search}
          page={page}
          onPage={setPage}
          row={(token) => (
            <tr key={token.id}>
              <td>
                <Link href={`/tokens/${encodeURIComponent(token.id)}`}>
                  <code>{token.id}</code>
                </Link>
              </td>
              <td>{token.type}</td>
              <td>
                <code>{shownData(token)}</code>
              </td>
              <td>{token.containers.join(", ")}</td>
              <td>{formatTime(token.createdAt)}</td>
            </tr>
          )}
        />
      )}
    </section>
  );
}

function CreateToken({ dataKey }: { dataKey: DataKey }) {
  const queries = useQueryClient();
  const [, navigate] = useLocation();
  const [type, setType] = useState<TokenType>("token");
  const [data, setData] = useState("");
  const [containers, setContainers] = useState("");
  const [mask, setMask] = useState("");
  const [invalid, setInvalid] = useState<string | undefined>(undefined);
  const create = useMutation({
    mutationFn: (value: unknown) =>
      dataKey.client.tokens.create({
        type,
        data: value,
        ...(containers.trim() !== "" && {
          containers: commaList(containers),
        }),
        ...(mask.trim() !== "" && { mask: mask.trim() }),
      }),
    onSuccess: async (token) => {
      await queries.invalidateQueries({ queryKey: ["data"] });
      navigate(`/tokens/${encodeURIComponent(token.id)}`);
    },
  });
  const errors = fieldErrors(create.error);

  function submit(event: FormEvent) {
    event.preventDefault();
    setInvalid(undefined);
    // Objects (a card, a bank account) are written as JSON; anything else is the text as typed.
    const trimmed = data.trim();
    if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
      try {
        create.mutate(JSON.parse(trimmed) as unknown);
      } catch (error) {
        setInvalid(`The data looks like JSON but does not parse: ${(error as Error).message}`);
      }
      return;
    }
    create.mutate(data);
  }

  return (
    <section aria-labelledby="create-title">
      <h2 id="create-title">Create a token</h2>
      <form onSubmit={submit}>
        <ChoiceField
          label="Type"
          errors={errors.type}
          choices={TOKEN_TYPES}
          value={type}
          onChange={setType}
        />
        <TextAreaField
          label="Data"
          hint='Text, or JSON for an object: {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}'
          errors={[...(errors.data ?? []), ...(invalid === undefined ? [] : [invalid])]}
          rows={2}
          value={data}
          onChange={setData}
        />
        <TextField
          label="Containers (optional)"
          hint="Comma-separated; default the type's container."
          errors={errors.containers}
          spellCheck={false}
          value={containers}
          onChange={setContainers}
        />
        <TextField
          label="Mask (optional)"
          hint="An expression like {{ data | reveal_last: 4 }}"
          errors={errors.mask}
          spellCheck={false}
          value={mask}
          onChange={setMask}
        />
        <Problem error={create.error} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Create token
        </button>
      </form>
    </section>
  );
}
