import { useQueryClient } from "@tanstack/react-query";
import type { Application, TesseraClient } from "@tessera/sdk";
import { TesseraForbiddenError } from "@tessera/sdk";
import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from "react";
import { clientFor } from "./api";

/** The private key the token pages and reactor invocations use (management keys hold no token permission). */
export interface DataKey {
  readonly client: TesseraClient;
  /** Known when the key was adopted from a create or regenerate in this tab. */
  readonly application?: { readonly id: string; readonly name: string };
}

export interface Session {
  readonly client: TesseraClient;
  /** The signed-in key's Application; undefined when the key lacks application:read. */
  readonly self: Application | undefined;
  readonly dataKey: DataKey | undefined;
  /** Why the last sign-out or key drop happened, for the next page to say. */
  readonly notice: string | undefined;
}

interface SessionApi {
  readonly session: Session | undefined;
  readonly notice: string | undefined;
  readonly signIn: (key: string) => Promise<void>;
  readonly signOut: (notice?: string) => void;
  readonly adoptDataKey: (key: string, application?: DataKey["application"]) => void;
  readonly dropDataKey: (notice?: string) => void;
}

const SessionContext = createContext<SessionApi | undefined>(undefined);

/**
 * Keys live in this component's state and in the clients' closures only: never in localStorage, sessionStorage,
 * cookies or the URL, so they are gone when the tab closes or reloads. A 401 on the management key signs out; a
 * 401 on the private key drops that key alone.
 */
export function SessionProvider({ children }: { children: ReactNode }) {
  const queries = useQueryClient();
  const [session, setSession] = useState<Session | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  const signOut = useCallback(
    (why?: string) => {
      setSession(undefined);
      setNotice(why);
      // Nothing fetched with the key outlives it.
      queries.clear();
    },
    [queries],
  );

  const signIn = useCallback(
    async (key: string) => {
      // Until the key is accepted, a 401 is the sign-in's own failure, not a sign-out.
      let signedIn = false;
      const client = clientFor(key, () => {
        if (signedIn) signOut("The server refused the management key (401): you are signed out.");
      });
      let self: Application | undefined;
      try {
        self = await client.applications.getByKey();
      } catch (error) {
        // Authenticated, but without application:read: the pages say what the key may not do.
        if (!(error instanceof TesseraForbiddenError)) throw error;
      }
      signedIn = true;
      setNotice(undefined);
      setSession({ client, self, dataKey: undefined, notice: undefined });
    },
    [signOut],
  );

  const dropDataKey = useCallback(
    (why?: string) => {
      setSession((current) => current && { ...current, dataKey: undefined, notice: why });
      queries.removeQueries({ queryKey: ["data"] });
    },
    [queries],
  );

  const adoptDataKey = useCallback(
    (key: string, application?: DataKey["application"]) => {
      const client = clientFor(key, () =>
        dropDataKey("The server refused the private key (401); paste another to use the token pages."),
      );
      queries.removeQueries({ queryKey: ["data"] });
      setSession(
        (current) =>
          current && {
            ...current,
            dataKey: { client, ...(application && { application }) },
            notice: undefined,
          },
      );
    },
    [dropDataKey, queries],
  );

  const api = useMemo(
    () => ({ session, notice, signIn, signOut, adoptDataKey, dropDataKey }),
    [session, notice, signIn, signOut, adoptDataKey, dropDataKey],
  );
  return <SessionContext.Provider value={api}>{children}</SessionContext.Provider>;
}

export function useSessionApi(): SessionApi {
  const api = useContext(SessionContext);
  if (api === undefined) throw new Error("useSessionApi outside SessionProvider");
  return api;
}

/** The signed-in session; pages are only rendered inside one. */
export function useSession(): Session {
  const { session } = useSessionApi();
  if (session === undefined) throw new Error("useSession without a session");
  return session;
}
