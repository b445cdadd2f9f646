import { TesseraError, type Page, type Pagination } from "@tessera/sdk";
import {
  useEffect,
  useId,
  useRef,
  useState,
  type InputHTMLAttributes,
  type ReactNode,
  type TextareaHTMLAttributes,
} from "react";
import { describeError } from "../api";

/** A page's heading; focused when the page opens, so that screen readers announce where the operator is. */
export function PageTitle({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    ref.current?.focus();
    document.title = `${typeof children === "string" ? children : "Tessera"} · Tessera console`;
  }, [children]);
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children}
    </h1>
  );
}

/** A failed call as the server explained it: the problem's title and detail, and field errors not shown elsewhere. */
export function Problem({ error, fields = true }: { error: unknown; fields?: boolean }) {
  if (error === null || error === undefined) return null;
  const problem = error instanceof TesseraError ? error : undefined;
  const entries = fields && problem?.errors !== undefined ? Object.entries(problem.errors) : [];
  return (
    <div role="alert" className="problem">
      <strong>{problem === undefined ? "Request failed" : `${problem.status} ${problem.title ?? ""}`}</strong>
      <p>{describeError(error)}</p>
      {entries.length > 0 && (
        <ul>
          {entries.map(([field, messages]) => (
            <li key={field}>
              <code>{field}</code>: {messages.join("; ")}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A labelled control with its hint and its errors, tied together for assistive technology. */
export function Field({
  label,
  hint,
  errors,
  children,
}: {
  label: string;
  hint?: ReactNode;
  errors?: readonly string[] | undefined;
  children: (props: { id: string; "aria-describedby"?: string; "aria-invalid"?: boolean }) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [hint !== undefined && hintId, errors?.length && errorId].filter(Boolean).join(" ");
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        ...(describedBy !== "" && { "aria-describedby": describedBy }),
        ...(errors?.length ? { "aria-invalid": true } : {}),
      })}
      {hint !== undefined && (
        <div id={hintId} className="hint">
          {hint}
        </div>
      )}
      {errors !== undefined && errors.length > 0 && (
        <div id={errorId} className="field-error">
          {errors.join("; ")}
        </div>
      )}
    </div>
  );
}

/** What a Field around one control holds: its label, hint and errors, and the control's text. */
interface FieldOf<T extends string> {
  label: string;
  hint?: ReactNode;
  errors?: readonly string[] | undefined;
  value: T;
  onChange: (value: T) => void;
}

type Own = "id" | "value" | "onChange";

/** An <input> in a Field; attributes other than the Field's go to the input. */
export function TextField({
  label,
  hint,
  errors,
  value,
  onChange,
  ...input
}: FieldOf<string> & Omit<InputHTMLAttributes<HTMLInputElement>, Own>) {
  return (
    <Field label={label} hint={hint} errors={errors}>
      {(props) => (
        <input {...input} {...props} value={value} onChange={(event) => onChange(event.target.value)} />
      )}
    </Field>
  );
}

/** A <textarea> in a Field, not spell-checked (it holds data, JSON or queries, not prose). */
export function TextAreaField({
  label,
  hint,
  errors,
  value,
  onChange,
  ...textarea
}: FieldOf<string> & Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, Own | "spellCheck">) {
  return (
    <Field label={label} hint={hint} errors={errors}>
      {(props) => (
        <textarea
          {...textarea}
          {...props}
          spellCheck={false}
          value={value}
          onChange={(event) => onChange(event.target.value)}
        />
      )}
    </Field>
  );
}

/**
 * A <select> in a Field of a closed list of names, each its own label. `none` labels a first choice whose value is
 * "", for a value that may be empty.
 */
export function ChoiceField<T extends string>({
  label,
  hint,
  errors,
  value,
  onChange,
  choices,
  none,
}: FieldOf<T> & { choices: readonly T[]; none?: "" extends T ? string : never }) {
  return (
    <Field label={label} hint={hint} errors={errors}>
      {(props) => (
        <select {...props} value={value} onChange={(event) => onChange(event.target.value as T)}>
          {none !== undefined && <option value="">{none}</option>}
          {choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/**
 * The input of an API key: masked, without autocomplete, and without spell-checking, since a browser's
 * spell-checker may send what it reads to a service.
 */
export function KeyInput(
  props: Omit<InputHTMLAttributes<HTMLInputElement>, "type" | "autoComplete" | "spellCheck">,
) {
  return <input {...props} type="password" autoComplete="off" spellCheck={false} />;
}

/** "a, b,, c" → ["a", "b", "c"]: a comma-separated field as a list. */
export function commaList(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/**
 * A confirmation in a modal <dialog>: the browser keeps focus inside it and Escape cancels. Nothing happens
 * until the operator confirms.
 */
export function ConfirmButton({
  label,
  title,
  children,
  confirmLabel,
  onConfirm,
  danger = false,
}: {
  label: string;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  danger?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  return (
    <>
      <button
        type="button"
        className={danger ? "danger" : undefined}
        onClick={() => dialog.current?.showModal()}
      >
        {label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <h2 id={titleId}>{title}</h2>
        <div>{children}</div>
        <div className="actions">
          <button type="button" onClick={() => dialog.current?.close()} autoFocus>
            Cancel
          </button>
          <button
            type="button"
            className={danger ? "danger" : "primary"}
            onClick={() => {
              dialog.current?.close();
              onConfirm();
            }}
          >
            {confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** A secret shown once (an API key, a webhook secret), with a copy button. */
export function SecretReveal({
  label,
  value,
  children,
}: {
  label: string;
  value: string;
  children?: ReactNode;
}) {
  const [copied, setCopied] = useState<string | undefined>(undefined);
  const id = useId();
  return (
    <section className="secret" aria-labelledby={id}>
      <h2 id={id}>{label}</h2>
      <p>Shown once: copy it now. The server keeps only a hash and cannot show it again.</p>
      <div className="secret-row">
        <code data-testid="secret-value">{value}</code>
        <button
          type="button"
          onClick={() => {
            navigator.clipboard.writeText(value).then(
              () => setCopied("Copied to the clipboard."),
              () => setCopied("The browser refused the clipboard: select the text and copy it."),
            );
          }}
        >
          Copy
        </button>
      </div>
      <p role="status" className="hint">
        {copied}
      </p>
      {children}
    </section>
  );
}

export function Pager({
  page,
  pagination,
  onPage,
}: {
  page: number;
  pagination: Pagination;
  onPage: (page: number) => void;
}) {
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page} of {Math.max(pagination.totalPages, 1)} · {pagination.totalItems} in all
      </span>
      <button type="button" disabled={page >= pagination.totalPages} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}

export function formatTime(iso: string | undefined): string {
  if (iso === undefined) return "—";
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

/**
 * A table under a row of column headings, in a region that may scroll sideways on a narrow screen: focusable and
 * labelled, so that keyboard users can scroll it too (WCAG 2.1.1). The caption is for assistive technology unless
 * `showCaption`.
 */
export function DataTable({
  label,
  caption,
  showCaption = false,
  columns,
  children,
}: {
  label: string;
  caption: ReactNode;
  showCaption?: boolean;
  columns: readonly string[];
  children: ReactNode;
}) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      <table>
        <caption className={showCaption ? undefined : "visually-hidden"}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/**
 * A list page's table: the problem a query met, or its page of rows (`row` gives each its <tr> with a key) above a
 * pager. With `empty`, a page without rows says so instead of showing an empty table.
 */
export function PagedTable<T>({
  query,
  page,
  onPage,
  row,
  empty,
  ...table
}: {
  query: { readonly error: unknown; readonly data: Page<T> | undefined };
  page: number;
  onPage: (page: number) => void;
  row: (item: T) => ReactNode;
  empty?: string;
  label: string;
  caption: string;
  columns: readonly string[];
}) {
  return (
    <>
      <Problem error={query.error} />
      {query.data !== undefined && (
        <>
          {empty !== undefined && query.data.data.length === 0 ? (
            <p role="status">{empty}</p>
          ) : (
            <DataTable {...table}>{query.data.data.map((item) => row(item))}</DataTable>
          )}
          <Pager page={page} pagination={query.data.pagination} onPage={onPage} />
        </>
      )}
    </>
  );
}

/** A query not answered yet: a status while it runs, then the problem it met. */
export function Pending({ query }: { query: { readonly isPending: boolean; readonly error: unknown } }) {
  return query.isPending ? <p role="status">Loading…</p> : <Problem error={query.error} />;
}
