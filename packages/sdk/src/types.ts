import type { Camelize, ReactorUserData, TokenUserData } from "./case.js";
import type { paths } from "./generated/openapi.js";

/**
 * The SDK's view of Tessera's resources, in camelCase. Each type is the server's own wire type, taken from
 * `generated/openapi.ts` (generated from the committed openapi.json) and renamed key by key by {@link Camelize},
 * so a change of the server's schemas reaches these types through `npm run openapi` and nothing else.
 *
 * Timestamps are ISO-8601 strings, as the server sends them; inputs accept a `Date` as well. Optional
 * properties are absent, never `null`.
 */

type Json<Response> = Response extends { content: { "application/json": infer Body } } ? Body : never;
type Operation<Path extends keyof paths, Method extends keyof paths[Path]> = paths[Path][Method];
type ResponseOf<Path extends keyof paths, Method extends keyof paths[Path], Status extends number> =
  Operation<Path, Method> extends { responses: Record<Status, infer Response> } ? Json<Response> : never;
type RequestOf<Path extends keyof paths, Method extends keyof paths[Path]> =
  Operation<Path, Method> extends { requestBody: infer Body } ? Json<Body> : never;
type QueryOf<Path extends keyof paths, Method extends keyof paths[Path]> =
  Operation<Path, Method> extends { parameters: { query?: infer Query } } ? NonNullable<Query> : never;

/** A `...At` timestamp of an input may be given as a `Date`; it is sent as its ISO string. */
type AcceptingDates<T> = { [K in keyof T]: K extends `${string}At` ? T[K] | Date : T[K] };

type WireApplication = ResponseOf<"/applications/{id}", "get", 200>;
type WireTokenPage = ResponseOf<"/tokens", "get", 200>;

export type Application = Camelize<WireApplication>;

/** An Application together with its API key, which the server shows only when it creates or regenerates one. */
export type ApplicationWithKey = Camelize<ResponseOf<"/applications", "post", 201>>;

export type ApplicationType = Application["type"];

/** Which ones an Application may hold depends on its type; the server answers 400 for any other combination. */
export type Permission = Application["permissions"][number];
export type TokenPermission = Extract<Permission, `token:${string}`>;
export type ManagementPermission = Exclude<Permission, TokenPermission>;

/** Grants token permissions on the tokens in `container`; lower `priority` values take precedence. */
export type AccessRule = Application["rules"][number];
/** Scopes a session's rule (`sessions.authorize`); Applications' rules take a `container` instead. */
export type Condition = NonNullable<AccessRule["conditions"]>[number];
/** How token data reaches a caller under a rule. */
export type Transform = AccessRule["transform"];

/** `permissions` or `rules` must be non-empty; `expiresAt` must be in the future. */
export type CreateApplicationInput = AcceptingDates<Camelize<RequestOf<"/applications", "post">>>;

/** A full replacement: omitted `permissions` or `rules` become empty. The type cannot be changed. */
export type UpdateApplicationInput = Camelize<RequestOf<"/applications/{id}", "put">>;

type ListApplicationsQuery = QueryOf<"/applications", "get">;

export interface ListApplicationsInput {
  /** Only these Applications (at most 100); sent as repeated `id` query parameters. */
  ids?: ListApplicationsQuery["id"];
  /** From 1; default 1. A page past the end is empty, not an error. */
  page?: ListApplicationsQuery["page"];
  /** 1–100; default 20. */
  size?: ListApplicationsQuery["size"];
}

export type Pagination = Camelize<WireTokenPage["pagination"]>;

/** One page of a list or search: `data` holds at most `pagination.pageSize` items. */
export interface Page<T> {
  pagination: Pagination;
  data: T[];
}

export type Tenant = Camelize<ResponseOf<"/tenants/self", "get", 200>>;

/** A new tenant with its first management Application, whose key is shown only in this response. */
export type CreatedTenant = Camelize<ResponseOf<"/tenants", "post", 201>>;

/** What shredding a tenant destroyed (`DELETE /tenants/{id}`). */
export type ShreddedTenant = Camelize<ResponseOf<"/tenants/{id}", "delete", 200>>;

export type CreateTenantInput = Camelize<RequestOf<"/tenants", "post">>;

/**
 * A token. `data` is shown through the caller's access rule: the value, its evaluated mask, or absent. `data`,
 * `metadata` and `mask` are the caller's own and keep their keys exactly as written.
 */
export type Token = Camelize<ResponseOf<"/tokens/{id}", "get", 200>, TokenUserData>;

export type TokenType = Token["type"];

/** `data` is required, any JSON but `null`; everything else has the token type's default. */
export type CreateTokenInput = AcceptingDates<Camelize<RequestOf<"/tokens", "post">, TokenUserData>>;

/**
 * A JSON merge patch (RFC 7386): only the members given change. `data`, `metadata` and `mask` are merged, a
 * `null` member removing that key; `null` for `expiresAt` removes the expiry, for `searchIndexes` or
 * `fingerprintExpression` restores the type's default.
 */
export type UpdateTokenInput = AcceptingDates<Camelize<RequestOf<"/tokens/{id}", "patch">, TokenUserData>>;

type ListTokensQuery = QueryOf<"/tokens", "get">;

export interface ListTokensInput {
  /** Only these tokens (at most 100); sent as repeated `id` query parameters. */
  ids?: ListTokensQuery["id"];
  type?: ListTokensQuery["type"];
  /**
   * Only tokens whose metadata has each of these keys with exactly this value (compared case-insensitively);
   * sent as `metadata.<key>=<value>` query parameters.
   */
  metadata?: Record<string, string>;
  /** From 1; default 1. A page past the end is empty, not an error. */
  page?: ListTokensQuery["page"];
  /** 1–100; default 20. */
  size?: ListTokensQuery["size"];
}

/** The query language is in docs/search.md; an empty or absent query matches every token the caller may search. */
export type SearchTokensInput = Camelize<RequestOf<"/tokens/search", "post">>;

/** For iterating over every page of a search: the page size only, the pages come one after another. */
export type SearchAllTokensInput = Omit<SearchTokensInput, "page">;

/** For iterating over every page of a list. */
export type ListAllTokensInput = Omit<ListTokensInput, "page">;
export type ListAllApplicationsInput = Omit<ListApplicationsInput, "page">;
export type ListAllReactorsInput = Omit<ListReactorsInput, "page">;

/**
 * A reactor. `configuration` keeps its names exactly as written; `applicationId` names the Application that `svc`
 * acts as, when there is one.
 */
export type Reactor = Camelize<ResponseOf<"/reactors/{id}", "get", 200>, ReactorUserData>;

/** A new reactor as create answers it: with its Application (without key) when it has one. */
export type CreatedReactor = Camelize<ResponseOf<"/reactors", "post", 201>, ReactorUserData>;

/**
 * `configuration` may be left out (an empty map); `application` is `{ id }` of a public or private Application of
 * the tenant. The code is compiled on the server: a syntax error or a module outside the allow-list is a 400.
 */
export type CreateReactorInput = Camelize<RequestOf<"/reactors", "post">, ReactorUserData>;

/** A full replacement: `configuration` is required (`{}` for none), an absent `application` is removed. */
export type UpdateReactorInput = Camelize<RequestOf<"/reactors/{id}", "put">, ReactorUserData>;

/**
 * A JSON merge patch (RFC 7386): only the members given change. `configuration` is merged name by name, a `null`
 * value removing that name; `application: null` removes the Application.
 */
export type PatchReactorInput = Camelize<RequestOf<"/reactors/{id}", "patch">, ReactorUserData>;

type ListReactorsQuery = QueryOf<"/reactors", "get">;

export interface ListReactorsInput {
  /** Only these reactors (at most 100); sent as repeated `id` query parameters. */
  ids?: ListReactorsQuery["id"];
  /**
   * Case-insensitive: names containing this text, or, when it holds a `*`, names matching it as a whole with each
   * `*` standing for any run of characters (`"stripe*"`).
   */
  name?: ListReactorsQuery["name"];
  /** From 1; default 1. A page past the end is empty, not an error. */
  page?: ListReactorsQuery["page"];
  /** 1–100; default 20. */
  size?: ListReactorsQuery["size"];
}

/**
 * What an asynchronous invocation answers at once: its id, to look it up, and `status: "pending"`. Its outcome
 * comes later as a signed webhook to the `callbackUrl` (verify it with {@link verifyWebhook}).
 */
export type AcceptedInvocation = Camelize<ResponseOf<"/reactors/{id}/react", "post", 202>>;

/** Where an asynchronous invocation is: run attempts, its outcome once finished, and each webhook delivery attempt. */
export type Invocation = Camelize<
  ResponseOf<"/reactors/{id}/invocations/{invocation_id}", "get", 200>,
  "result" | "response" | "error"
>;

/** One audit-log entry: `details` and `rule` as the server recorded them (docs/audit.md). */
export type AuditEntry = Camelize<ResponseOf<"/logs", "get", 200>["data"][number], "details" | "rule">;

type ListLogsQuery = QueryOf<"/logs", "get">;

export interface ListLogsInput {
  entityType?: ListLogsQuery["entity_type"];
  entityId?: string;
  actorId?: string;
  action?: ListLogsQuery["action"];
  /** From this time on (inclusive). */
  startDate?: string | Date;
  /** Before this time (exclusive). */
  endDate?: string | Date;
  /** From 1; default 1. */
  page?: number;
  /** 1–100; default 20. */
  size?: number;
}

export type ListAllLogsInput = Omit<ListLogsInput, "page">;

/** Give `tokenId` or `containers`; `permission` is a token permission. */
export type ExplainAccessInput = Camelize<RequestOf<"/access/explain", "post">>;

/**
 * An access decision explained: `allowed`, the `transform`, the deciding rule (`decidedBy`: an Application rule
 * with its `index` and `priority`, or a top-level permission), each rule tried before it (`passedOver`, with
 * `reason` and `detail`), and for writes the check on each container (`eachContainer`).
 */
export type AccessExplanation = Camelize<ResponseOf<"/access/explain", "post", 200>>;

/** The tenant's webhook signing secret in the `whsec_` form {@link verifyWebhook} takes. */
export type WebhookSecret = Camelize<ResponseOf<"/webhooks/secret", "get", 200>>;

/** A token request inside a tokenize body: an object whose string `type` marks it as one. */
export type TokenizeRequest = CreateTokenInput & { type: TokenType };

/** Any JSON. Token requests become tokens; every other leaf (string, number, boolean) a `token` token's id. */
export type TokenizeInput =
  | TokenizeRequest
  | string
  | number
  | boolean
  | null
  | readonly TokenizeInput[]
  | { readonly [key: string]: TokenizeInput };

/** The shape of a tokenize body with each token request replaced by its {@link Token}, each other leaf by an id. */
export type Tokenized<T> = T extends null
  ? null
  : T extends string | number | boolean
    ? string
    : T extends { type: string }
      ? Token
      : T extends readonly unknown[]
        ? { -readonly [I in keyof T]: Tokenized<T[I]> }
        : { -readonly [K in keyof T]: Tokenized<T[K]> };

/** A new session: its key for the browser that created it, and the nonce for the backend that authorizes it. */
export type Session = Camelize<ResponseOf<"/sessions", "post", 201>>;

/**
 * What a session may do: `permissions` and/or `rules` scoped by `conditions`, never more than the authorizing
 * Application holds; `expiresAt` ends it earlier (or later, up to the server's maximum).
 */
export type AuthorizeSessionInput = AcceptingDates<Camelize<RequestOf<"/sessions/authorize", "post">>>;
