import { TesseraError } from "@tessera/sdk";
import { useEffect, useId, useRef, useState, type ReactNode } from "react";
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
  totalPages,
  totalItems,
  onPage,
}: {
  page: number;
  totalPages: number;
  totalItems: number;
  onPage: (page: number) => void;
}) {
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page} of {Math.max(totalPages, 1)} · {totalItems} in all
      </span>
      <button type="button" disabled={page >= totalPages} onClick={() => onPage(page + 1)}>
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
 * A table that may scroll sideways on a narrow screen: a focusable, labelled region, so that keyboard users can
 * scroll it too (WCAG 2.1.1).
 */
export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}
