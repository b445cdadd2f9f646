import { lazy, Suspense } from "react";
import { Link, Redirect, Route, Router, Switch, useLocation } from "wouter";
import { ApplicationEdit } from "./pages/application-edit";
import { Applications } from "./pages/applications";
import { Audit } from "./pages/audit";
import { Explain } from "./pages/explain";
import { Settings } from "./pages/settings";
import { SignIn } from "./pages/sign-in";
import { TokenDetail } from "./pages/token-detail";
import { Tokens } from "./pages/tokens";
import { useSessionApi } from "./session";

// The reactor pages carry the code editor (CodeMirror): loaded when first opened, not with the console.
const Reactors = lazy(() => import("./pages/reactors"));
const ReactorEdit = lazy(() => import("./pages/reactor-edit"));

const NAV = [
  ["/applications", "Applications"],
  ["/explain", "Access explainer"],
  ["/tokens", "Tokens"],
  ["/reactors", "Reactors"],
  ["/audit", "Audit log"],
  ["/settings", "Settings"],
] as const;

function Navigation() {
  const [location] = useLocation();
  return (
    <nav aria-label="Main" className="main-nav">
      <ul>
        {NAV.map(([href, label]) => {
          const current = location === href || location.startsWith(`${href}/`);
          return (
            <li key={href}>
              <Link href={href} aria-current={current ? "page" : undefined}>
                {label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

function Shell() {
  const { session, signOut } = useSessionApi();
  if (session === undefined) return <SignIn />;
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Tessera</span>
        <span className="who">
          {session.self === undefined ? "Signed in" : `Signed in as ${session.self.name}`}
          {session.dataKey !== undefined && " · private key in use"}
        </span>
        <button type="button" onClick={() => signOut("Signed out.")}>
          Sign out
        </button>
      </header>
      <Navigation />
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<p role="status">Loading…</p>}>
          <Switch>
            <Route path="/applications" component={Applications} />
            <Route path="/applications/new">{() => <ApplicationEdit />}</Route>
            <Route path="/applications/:id">{(params) => <ApplicationEdit id={params.id} />}</Route>
            <Route path="/explain" component={Explain} />
            <Route path="/tokens" component={Tokens} />
            <Route path="/tokens/:id">{(params) => <TokenDetail id={params.id} />}</Route>
            <Route path="/reactors" component={Reactors} />
            <Route path="/reactors/new">{() => <ReactorEdit />}</Route>
            <Route path="/reactors/:id">{(params) => <ReactorEdit id={params.id} />}</Route>
            <Route path="/audit" component={Audit} />
            <Route path="/settings" component={Settings} />
            <Route>
              <Redirect to="/applications" replace />
            </Route>
          </Switch>
        </Suspense>
      </main>
    </>
  );
}

export function App() {
  return (
    <Router base="/console">
      <Shell />
    </Router>
  );
}
