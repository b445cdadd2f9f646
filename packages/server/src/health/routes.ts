import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { AppError } from "../server/errors.js";
import { storeOutage } from "../storage/availability.js";

export interface Readiness {
  /** Resolves when the store answers and migrations have run; rejects otherwise. */
  check(): Promise<void>;
  /**
   * Whether the master key's provider answers, and how many unwrapped tenant keys serve while it does not
   * (keys/providers/custody.ts). Absent where there is no master key (tests of the HTTP layer alone).
   */
  masterKey?(): { readonly state: "available" | "unavailable"; readonly cachedKeys: number };
}

const Status = Type.Object({ status: Type.String() });

const Ready = Type.Object(
  {
    status: Type.Union([Type.Literal("ready"), Type.Literal("degraded")], {
      description:
        "`ready`: the store answers and the master key's provider (HSM, KMS) answers. `degraded`: the provider " +
        "does not answer; tenant keys it unwrapped recently still serve, other requests answer 503 " +
        "`master-key-unavailable`.",
    }),
    master_key: Type.Optional(
      Type.Literal("unavailable", { description: "Present when `degraded`: what is degraded." }),
    ),
  },
  { additionalProperties: false },
);

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
          summary: "The store is reachable and migrated, and the master key can be used",
          security: [],
          response: { 200: Ready },
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
        const masterKey = readiness.masterKey?.();
        if (masterKey === undefined || masterKey.state === "available") return { status: "ready" as const };
        // Every instance usually shares the one HSM or KMS: failing readiness while cached keys still serve
        // would take them all out of the load balancer for an outage they can partly ride out.
        if (masterKey.cachedKeys > 0)
          return { status: "degraded" as const, master_key: "unavailable" as const };
        throw new AppError(
          "master-key-unavailable",
          "The vault's master key cannot be reached and no tenant key is cached: nothing can be decrypted.",
        );
      },
    );
  };
}
