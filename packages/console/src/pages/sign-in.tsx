import { useState, type FormEvent } from "react";
import { describeError } from "../api";
import { KeyInput, PageTitle } from "../components/ui";
import { useSessionApi } from "../session";

export function SignIn() {
  const { signIn, notice } = useSessionApi();
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await signIn(key.trim());
      setKey("");
    } catch (failure) {
      setError(describeError(failure));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" className="sign-in">
      <PageTitle>Sign in to Tessera</PageTitle>
      {notice !== undefined && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      <form onSubmit={(event) => void submit(event)}>
        <div className="field">
          <label htmlFor="management-key">Management key</label>
          <KeyInput
            id="management-key"
            required
            value={key}
            onChange={(event) => setKey(event.target.value)}
            aria-describedby="management-key-hint"
            {...(error !== undefined && { "aria-invalid": true })}
          />
          <div id="management-key-hint" className="hint">
            A <code>key_mgt_…</code> key (or the bootstrap key). It stays in this tab&apos;s memory only:
            never in storage or cookies. Reloading or closing the tab signs you out.
          </div>
        </div>
        {error !== undefined && (
          <p role="alert" className="problem">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy || key.trim() === ""}>
          Sign in
        </button>
      </form>
    </main>
  );
}
