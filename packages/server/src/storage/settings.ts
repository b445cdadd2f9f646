/** Which store the server opens (TESSERA_DATABASE_URL, parsed by config.ts). */
export type DatabaseConfig =
  | {
      kind: "sqlite";
      path: string;
      /** The size the WAL file is cut back to (TESSERA_SQLITE_WAL_LIMIT_MB; storage/checkpointer.ts). */
      walLimitBytes: number;
    }
  | { kind: "postgres"; url: string };
