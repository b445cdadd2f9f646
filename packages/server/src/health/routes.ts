import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { AppError } from "../server/errors.js";
import { storeOutage } from "../storage/availability.js";

export interface Readiness {
  /** Resolves when the store answers and migrations have run; rejects otherwise. */
  check(): Promise<void>;
}

const Status = Type.Object({ status: Type.String() });

export function healthRoutes(readiness: Readiness): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/healthz",
      {
        schema: {
          tags: ["Operations"],
          summary: "The process is up",
          security: [],
          response: { 200: Status },
        },
      },
      () => Promise.resolve({ status: "ok" }),
    );
    app.get(
      "/readyz",
      {
        schema: {
          tags: ["Operations"],
          summary: "The store is reachable and migrated",
          security: [],
          response: { 200: Status },
        },
      },
      async () => {
        try {
          await readiness.check();
        } catch (error) {
          const outage = storeOutage(error);
          throw outage === undefined
            ? new AppError("unavailable", "The store is not reachable or not migrated.")
            : Object.assign(AppError.storeUnavailable(outage), { cause: error });
        }
        return { status: "ready" };
      },
    );
  };
}
