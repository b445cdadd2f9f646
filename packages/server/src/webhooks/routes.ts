import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { principalOf } from "../server/auth.js";
import { responses } from "../server/problem-schema.js";
import { Timestamp } from "../server/schemas.js";
import type { WebhookSecret, WebhookSecrets } from "./secrets.js";

const WebhookSecretSchema = Type.Object({
  secret: Type.String({
    description: "`whsec_` and the key in base64, as Standard Webhooks libraries take it.",
  }),
  version: Type.Integer(),
  created_at: Timestamp,
  previous_valid_until: Type.Optional(
    Type.String({
      format: "date-time",
      description: "After a rotation: until when messages are also signed with the previous secret.",
    }),
  ),
});

function presentSecret(secret: WebhookSecret) {
  return {
    secret: secret.secret,
    version: secret.version,
    created_at: secret.createdAt,
    ...(secret.previousValidUntil !== undefined && { previous_valid_until: secret.previousValidUntil }),
  };
}

const tags = ["Webhooks"];

export function webhookRoutes(secrets: WebhookSecrets): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/webhooks/secret",
      {
        config: { permission: "webhook:read" },
        schema: {
          tags,
          summary: "Get the tenant's webhook signing secret",
          response: responses({ 200: WebhookSecretSchema }),
        },
      },
      async (request) => presentSecret(await secrets.get(principalOf(request))),
    );

    app.post(
      "/webhooks/secret/rotate",
      {
        config: { permission: "webhook:update" },
        schema: {
          tags,
          summary: "Rotate the tenant's webhook signing secret",
          description:
            "Messages are signed with the new secret and, for 24 hours, with the previous one too: both " +
            "signatures are in `webhook-signature`, so receivers switch secrets without losing a message.",
          response: responses({ 200: WebhookSecretSchema }),
        },
      },
      async (request) => presentSecret(await secrets.rotate(principalOf(request))),
    );
  };
}
