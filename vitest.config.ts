import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

// The whole suite runs once per store: the same tests, the same assertions, two real engines.
export default defineConfig({
  // The packages of this repository import each other from source (package.json "exports"), never a stale dist/.
  ssr: { resolve: { conditions: ["tessera-source", ...defaultServerConditions] } },
  test: {
    include: ["packages/*/src/**/*.test.ts", "packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      { extends: true, test: { name: "sqlite", env: { TESSERA_TEST_STORE: "sqlite" } } },
      {
        extends: true,
        test: {
          name: "postgres",
          env: { TESSERA_TEST_STORE: "postgres" },
          globalSetup: ["packages/server/test/postgres-setup.ts"],
        },
      },
    ],
  },
});
