import { Type, type Static } from "typebox";
import { AccessRuleSchema, PermissionSchema } from "../applications/schemas.js";
import { Timestamp } from "../server/schemas.js";

export const SessionSchema = Type.Object({
  session_key: Type.String({
    description:
      "The session's API key (prefix key_ses_): for the browser that created the session; shown only here.",
  }),
  nonce: Type.String({
    description: "Hand this to your backend, which authorizes the session with it (once).",
  }),
  expires_at: Timestamp,
});

export const AuthorizeSessionBody = Type.Object({
  nonce: Type.String({ minLength: 1, maxLength: 200 }),
  expires_at: Type.Optional(
    Type.String({
      format: "date-time",
      description: "Ends the session earlier (or later, up to the configured maximum) than its creation set.",
    }),
  ),
  permissions: Type.Optional(
    Type.Array(PermissionSchema, {
      maxItems: 50,
      description: "Token permissions over every token the authorizing Application reaches.",
    }),
  ),
  rules: Type.Optional(
    Type.Array(AccessRuleSchema, {
      maxItems: 100,
      description: "Rules scoped by `conditions` (never `container`), within the authorizing Application's.",
    }),
  ),
});
export type AuthorizeSessionBody = Static<typeof AuthorizeSessionBody>;
