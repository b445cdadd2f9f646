import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./app";
import { SessionProvider } from "./session";
import "./styles/base.css";
import "./styles/components.css";

const queries = new QueryClient({
  defaultOptions: {
    // The SDK already surfaced the server's answer; a 4xx retried would only repeat it.
    queries: { retry: false, refetchOnWindowFocus: false, staleTime: 5_000 },
  },
});

const root = document.getElementById("root");
if (root === null) throw new Error("no #root element");
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queries}>
      <SessionProvider>
        <App />
      </SessionProvider>
    </QueryClientProvider>
  </StrictMode>,
);
