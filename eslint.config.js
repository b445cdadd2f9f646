import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "data/**", "packages/cli/bin/**", "eslint.config.js"] },
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
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    // Layering (STYLE.md §2): pure modules never reach into features, storage or the web framework.
    files: ["packages/server/src/access/**", "packages/server/src/crypto/**", "packages/server/src/search/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: ["fastify", "kysely", "../storage/*", "../applications/*", "../tenants/*", "../server/*"] },
      ],
    },
  },
  {
    files: ["packages/server/src/*/service.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: ["fastify", "@fastify/*"] }] },
  },
);
