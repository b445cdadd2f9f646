import type { TestProject } from "vitest/node";
import { findPostgresBin, startCluster } from "./postgres-cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** An admin URL on a server where test files may create databases, or null to skip PostgreSQL. */
    postgresAdminUrl: string | null;
  }
}

/**
 * Starts one throwaway PostgreSQL cluster for the whole run (each test file makes its own database in it),
 * or uses TESSERA_TEST_DATABASE_URL. With CI=true a missing PostgreSQL fails the run instead of skipping.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const external = process.env.TESSERA_TEST_DATABASE_URL;
  if (external) {
    project.provide("postgresAdminUrl", external);
    return () => undefined;
  }
  const bin = findPostgresBin();
  if (bin === undefined) {
    if (process.env.CI === "true")
      throw new Error("CI=true requires PostgreSQL (initdb) or TESSERA_TEST_DATABASE_URL");
    console.warn("PostgreSQL not found: the postgres project's store tests are skipped");
    project.provide("postgresAdminUrl", null);
    return () => undefined;
  }
  const cluster = await startCluster(bin);
  const stopOnExit = () => cluster.stop();
  process.once("exit", stopOnExit);
  project.provide("postgresAdminUrl", cluster.url);
  return () => {
    process.off("exit", stopOnExit);
    cluster.stop();
  };
}
