import { useState, type FormEvent, type ReactNode } from "react";
import { Link } from "wouter";
import type { DataKey } from "../session";
import { useSession, useSessionApi } from "../session";
import { KeyInput } from "./ui";

/**
 * Management keys hold no token permission (DESIGN §6), so the token pages and reactor invocations act with a
 * private key the operator gives for this tab: one pasted here, or one adopted when the console created or
 * regenerated it. Kept in memory like the management key; a 401 drops it.
 */
export function DataKeyGate({
  purpose,
  children,
}: {
  purpose: string;
  children: (key: DataKey) => ReactNode;
}) {
  const { dataKey, notice } = useSession();
  const { adoptDataKey, dropDataKey } = useSessionApi();
  const [key, setKey] = useState("");

  if (dataKey !== undefined) {
    return (
      <>
        <p className="data-key">
          Acting with{" "}
          {dataKey.application === undefined
            ? "a pasted private key"
            : `the key of ${dataKey.application.name}`}
          : what you see is what its rules show.{" "}
          <button type="button" className="link" onClick={() => dropDataKey()}>
            Forget this key
          </button>
        </p>
        {children(dataKey)}
      </>
    );
  }

  function submit(event: FormEvent) {
    event.preventDefault();
    adoptDataKey(key.trim());
    setKey("");
  }

  return (
    <section className="data-key-gate" aria-labelledby="data-key-title">
      <h2 id="data-key-title">A private key is needed</h2>
      {notice !== undefined && <p role="alert">{notice}</p>}
      <p>
        Management keys never see token data, so {purpose} act with a private Application&apos;s key, and show
        exactly what that key&apos;s rules allow. Paste one, or create one under{" "}
        <Link href="/applications/new">Applications</Link> and choose &ldquo;use this key&rdquo;. It stays in
        this tab&apos;s memory only.
      </p>
      <form onSubmit={submit} className="inline-form">
        <label htmlFor="data-key">Private key</label>
        <KeyInput id="data-key" value={key} onChange={(event) => setKey(event.target.value)} />
        <button type="submit" disabled={key.trim() === ""}>
          Use this key
        </button>
      </form>
    </section>
  );
}
