import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/**",
      "**/dist/**",
      "data/**",
      "packages/cli/bin/**",
      "eslint.config.js",
      ".dependency-cruiser.cjs",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      // Fastify plugins are async functions by contract, with or without an await inside.
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" },
      ],
    },
  },
  {
    // The reactor harness is plain JavaScript run by Deno, outside the TypeScript project.
    files: ["packages/server/src/reactors/sandbox/harness.js"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: "module",
      parserOptions: { projectService: false, project: null },
      globals: { Deno: "readonly", TextEncoder: "readonly", TextDecoder: "readonly", globalThis: "readonly" },
    },
  },
  {
    // Reactor code as Basis Theory users write it (CommonJS, Node 16), run by the reactor tests in the sandbox.
    files: ["packages/server/test/fixtures/bt-reactors/**/*.js"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: "commonjs",
      parserOptions: { projectService: false, project: null },
      globals: { Buffer: "readonly", console: "readonly", global: "readonly" },
    },
    // CommonJS is what the sandbox runs: `require` is the only way these files load modules.
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      "@typescript-eslint/no-require-imports": "off",
      // Node 16 code declares its own Buffer or process from require(), shadowing the globals.
      "no-redeclare": ["error", { builtinGlobals: false }],
    },
  },
  {
    // Tests read JSON response bodies, which are `any` by nature; the assertions are the type check.
    files: ["**/*.test.ts", "**/test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  {
    // Migrations are frozen in time and must not depend on the current schema types (Kysely's advice).
    files: ["packages/server/src/storage/migrations/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off", "@typescript-eslint/no-unsafe-argument": "off" },
  },
  {
    // One logger factory (observability/logging.ts) decides what a log line may hold: its serializers keep error
    // messages, URLs and headers out. A logger made elsewhere would not have them.
    files: ["packages/**/*.ts", "bench/**/*.ts"],
    ignores: ["packages/server/src/observability/logging.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          paths: [
            {
              name: "pino",
              allowTypeImports: true,
              message: "Create loggers with createLogger from observability/logging.ts.",
            },
          ],
        },
      ],
    },
  },
);
