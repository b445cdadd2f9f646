import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Served by the server under /console (packages/server/src/console/routes.ts); `npm run dev` proxies the API to a
// server on :3000 so that the app still talks to one origin.
const API = ["/applications", "/access", "/tokens", "/reactors", "/logs", "/tenants", "/webhooks"];

export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // The server's CSP forbids inline script: never inline a module as a data: URL either.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    proxy: Object.fromEntries(API.map((path) => [path, "http://127.0.0.1:3000"])),
  },
});
