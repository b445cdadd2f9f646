import { describe, expectTypeOf, it } from "vitest";
import type { CamelCase, Camelize } from "../src/case.js";
import type {
  AccessRule,
  Application,
  CreateApplicationInput,
  CreateTokenInput,
  ListTokensInput,
  Page,
  PatchReactorInput,
  Permission,
  Reactor,
  Token,
  TokenPermission,
  TokenType,
  Tokenized,
  UpdateTokenInput,
} from "../src/index.js";

// Checked by `npm run typecheck` (these files are in tsconfig.json); at run time each test is empty.
describe("public types derived from the generated wire types", () => {
  it("renames keys snake → camel at every depth, except the values of verbatim keys", () => {
    expectTypeOf<CamelCase<"tenant_id">>().toEqualTypeOf<"tenantId">();
    expectTypeOf<CamelCase<"fingerprint_expression">>().toEqualTypeOf<"fingerprintExpression">();
    expectTypeOf<CamelCase<"_extras">>().toEqualTypeOf<"_extras">();
    expectTypeOf<CamelCase<"id">>().toEqualTypeOf<"id">();
    expectTypeOf<
      Camelize<{ a_b: { c_d: number }[]; e_f?: string; data: { g_h: 1 } }, "data">
    >().toEqualTypeOf<{ aB: { cD: number }[]; eF?: string; data: { g_h: 1 } }>();
  });

  it("gives Token its wire fields in camelCase, with data, metadata and mask as the caller wrote them", () => {
    expectTypeOf<Token["tenantId"]>().toEqualTypeOf<string>();
    expectTypeOf<Token["data"]>().toEqualTypeOf<unknown>();
    expectTypeOf<Token["fingerprintExpression"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<NonNullable<Token["metadata"]>>().toEqualTypeOf<{ [key: string]: string }>();
    expectTypeOf<NonNullable<Token["_extras"]>>().toEqualTypeOf<{ deduplicated: boolean }>();
    expectTypeOf<Token>().not.toHaveProperty("tenant_id");
    expectTypeOf<TokenType>().toEqualTypeOf<
      | "token"
      | "card"
      | "bank"
      | "card_number"
      | "social_security_number"
      | "employer_id_number"
      | "us_bank_account_number"
      | "us_bank_routing_number"
    >();
  });

  it("types Applications, rules and permissions from the schema's enums", () => {
    expectTypeOf<Application["rules"]>().toEqualTypeOf<AccessRule[]>();
    expectTypeOf<AccessRule["transform"]>().toEqualTypeOf<"redact" | "mask" | "reveal">();
    expectTypeOf<TokenPermission>().toEqualTypeOf<
      "token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use"
    >();
    expectTypeOf<"tenant:create">().toExtend<Permission>();
    expectTypeOf<Page<Application>["pagination"]>().toEqualTypeOf<{
      totalItems: number;
      pageNumber: number;
      pageSize: number;
      totalPages: number;
    }>();
  });

  it("gives Reactor its configuration as written and an optional applicationId", () => {
    expectTypeOf<Reactor["configuration"]>().toEqualTypeOf<{ [key: string]: string }>();
    expectTypeOf<Reactor["applicationId"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Reactor>().not.toHaveProperty("application");
    expectTypeOf<{ a: null; b: string }>().toExtend<NonNullable<PatchReactorInput["configuration"]>>();
    expectTypeOf<null>().toExtend<PatchReactorInput["application"]>();
  });

  it("accepts a Date for timestamps of inputs, and null in a merge patch", () => {
    expectTypeOf<Date>().toExtend<CreateTokenInput["expiresAt"]>();
    expectTypeOf<Date>().toExtend<CreateApplicationInput["expiresAt"]>();
    expectTypeOf<null>().toExtend<UpdateTokenInput["expiresAt"]>();
    expectTypeOf<{ a: null; b: string }>().toExtend<UpdateTokenInput["metadata"]>();
    expectTypeOf<{ customer: string }>().toExtend<ListTokensInput["metadata"]>();
  });

  it("types a tokenize answer after the body: token requests → Token, other leaves → id", () => {
    type Body = {
      name: string;
      card: { type: "card_number"; data: string };
      phones: readonly [string, null];
      age: number;
    };
    expectTypeOf<Tokenized<Body>>().toEqualTypeOf<{
      name: string;
      card: Token;
      phones: [string, null];
      age: string;
    }>();
    expectTypeOf<Tokenized<{ type: "token"; data: 1 }>>().toEqualTypeOf<Token>();
    expectTypeOf<Tokenized<string[]>>().toEqualTypeOf<string[]>();
  });
});
