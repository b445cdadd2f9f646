import { Type, type Static } from "typebox";
import {
  CursorBodyParams,
  CursorPageOf,
  CursorQueryParams,
  PageBodyParams,
  PageOf,
  PageParams,
} from "../server/pagination.js";
import { NO_CONTROL_CHARACTERS, OrNull, StringEnum, Timestamp, Uuid } from "../server/schemas.js";
import { TOKEN_TYPES } from "./token-types.js";

export const MAX_EXPRESSION_LENGTH = 4096;
export const MAX_CONTAINERS = 20;
export const MAX_SEARCH_INDEXES = 20;
export const MAX_METADATA_ENTRIES = 50;

const Expression = Type.String({ minLength: 1, maxLength: MAX_EXPRESSION_LENGTH });
const TokenType = StringEnum(TOKEN_TYPES);
// TypeBox drops a Record's key schema from the JSON Schema it emits, so key lengths are set with propertyNames.
const METADATA_KEY = { minLength: 1, maxLength: 128 };
const Metadata = Type.Record(Type.String(METADATA_KEY), Type.String({ maxLength: 1024 }), {
  maxProperties: MAX_METADATA_ENTRIES,
  propertyNames: METADATA_KEY,
  description: "Non-sensitive string pairs; searchable, never encrypted.",
});
const Containers = Type.Array(Type.String({ minLength: 1, maxLength: 400 }), { maxItems: MAX_CONTAINERS });
const SearchIndexes = Type.Array(Expression, { maxItems: MAX_SEARCH_INDEXES });
/** One expression, or one per field of complex data (`{ "number": "{{ data.number | last4 }}" }`). */
const Mask = Type.Unsafe<string | Record<string, string>>({
  type: ["string", "object"],
  maxLength: MAX_EXPRESSION_LENGTH,
  additionalProperties: { type: "string", maxLength: MAX_EXPRESSION_LENGTH },
  maxProperties: 20,
});
const AnyJson = Type.Unknown({ description: "Any JSON value." });

/** Basis Theory's deprecated `privacy` block is accepted and ignored, so its SDKs keep working (wire-format §4.1). */
const Privacy = Type.Optional(Type.Unknown({ description: "Deprecated; accepted and ignored." }));

// Unknown fields are refused: a misspelt `containers` or `search_indexes` silently ignored would store a token
// somewhere other than the caller meant.
export const CreateTokenBody = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_EXPRESSION_LENGTH,
        description: "3–400 characters, or an alias expression.",
      }),
    ),
    type: Type.Optional(TokenType),
    data: AnyJson,
    metadata: Type.Optional(Metadata),
    search_indexes: Type.Optional(SearchIndexes),
    fingerprint_expression: Type.Optional(Expression),
    mask: Type.Optional(Mask),
    deduplicate_token: Type.Optional(Type.Boolean()),
    expires_at: Type.Optional(
      OrNull(Type.String({ format: "date-time" }), "When the token expires; absent or null for never."),
    ),
    containers: Type.Optional(Containers),
    privacy: Privacy,
  },
  { additionalProperties: false },
);
export type CreateTokenBody = Static<typeof CreateTokenBody>;

function nullable<T>(schema: Record<string, unknown>, type: string | string[]) {
  return Type.Unsafe<T | null>({ ...schema, type: [...(Array.isArray(type) ? type : [type]), "null"] });
}

/** RFC 7386: a member set to null is removed (metadata keys, mask fields, expires_at). */
export const PatchTokenBody = Type.Object(
  {
    data: Type.Optional(AnyJson),
    metadata: Type.Optional(
      nullable<Record<string, string | null>>(
        {
          additionalProperties: { type: ["string", "null"], maxLength: 1024 },
          maxProperties: MAX_METADATA_ENTRIES,
          propertyNames: METADATA_KEY,
        },
        "object",
      ),
    ),
    search_indexes: Type.Optional(
      nullable<string[]>({ items: Expression, maxItems: MAX_SEARCH_INDEXES }, "array"),
    ),
    fingerprint_expression: Type.Optional(
      nullable<string>({ minLength: 1, maxLength: MAX_EXPRESSION_LENGTH }, "string"),
    ),
    mask: Type.Optional(
      nullable<string | Record<string, string | null>>(
        {
          maxLength: MAX_EXPRESSION_LENGTH,
          additionalProperties: { type: ["string", "null"], maxLength: MAX_EXPRESSION_LENGTH },
          maxProperties: 20,
        },
        ["string", "object"],
      ),
    ),
    deduplicate_token: Type.Optional(Type.Boolean()),
    expires_at: Type.Optional(nullable<string>({ format: "date-time" }, "string")),
    containers: Type.Optional(Containers),
    privacy: Privacy,
  },
  { additionalProperties: false },
);
export type PatchTokenBody = Static<typeof PatchTokenBody>;

export const TokenSchema = Type.Object({
  id: Type.String(),
  type: TokenType,
  tenant_id: Uuid,
  data: Type.Optional(AnyJson),
  mask: Type.Optional(AnyJson),
  // Optional because a deduplicated token the caller may not read shows only its identity (wire-format §4.3).
  metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
  fingerprint: Type.Optional(Type.String()),
  fingerprint_expression: Type.Optional(Type.String()),
  search_indexes: Type.Optional(Type.Array(Type.String())),
  containers: Type.Array(Type.String()),
  expires_at: Type.Optional(Timestamp),
  created_by: Type.Optional(Uuid),
  created_at: Type.Optional(Timestamp),
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
  _extras: Type.Optional(Type.Object({ deduplicated: Type.Boolean() })),
});

/** Token ids never hold control characters (creation refuses them), and PostgreSQL text cannot hold NUL. */
const TokenId = Type.String({ minLength: 1, maxLength: 400, pattern: NO_CONTROL_CHARACTERS });

export const TokenIdParams = Type.Object({ id: TokenId });

export const ListTokensQuery = Type.Object(
  {
    id: Type.Optional(Type.Array(TokenId, { maxItems: 100 })),
    type: Type.Optional(TokenType),
    ...PageParams,
  },
  { description: "Also `metadata.<key>=<value>` pairs (exact, case-insensitive)." },
);

export const TokenPage = PageOf(TokenSchema);

const Query = Type.Optional(
  Type.Union([Type.String(), Type.Null()], {
    description:
      "Lucene-style query (spec §4.1, docs/search.md); empty or null matches every token the caller may search. " +
      "At most 4 KiB, 64 terms and 16 levels of parentheses.",
    examples: ["type:social_security_number AND metadata.region:eu AND created_at:[2025-01-01 TO *]"],
  }),
);

export const SearchTokensBody = Type.Object(
  { query: Query, ...PageBodyParams },
  { additionalProperties: false },
);
export type SearchTokensBody = Static<typeof SearchTokensBody>;

/** `POST /v2/tokens/search` (wire-format §4.4): the whole query language, walked by cursor. */
export const SearchTokensV2Body = Type.Object(
  { query: Query, ...CursorBodyParams },
  { additionalProperties: false },
);
export type SearchTokensV2Body = Static<typeof SearchTokensV2Body>;

/** `GET /v2/tokens` (wire-format §4.3), as Basis Theory's node-sdk sends it. */
export const ListTokensV2Query = Type.Object({
  type: Type.Optional(TokenType),
  container: Type.Optional(
    Type.String({ minLength: 1, maxLength: 400, description: "Tokens in this container or below it." }),
  ),
  fingerprint: Type.Optional(Type.String({ minLength: 1, maxLength: 400 })),
  metadata: Type.Optional(
    Type.String({
      maxLength: 64 * 1024,
      description:
        'A JSON object of metadata pairs that must all match (exact, case-insensitive): `{"region":"eu"}`.',
    }),
  ),
  ...CursorQueryParams,
});
export type ListTokensV2Query = Static<typeof ListTokensV2Query>;

export const TokenCursorPage = CursorPageOf(TokenSchema);
