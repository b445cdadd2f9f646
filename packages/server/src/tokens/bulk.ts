import { decide, type Decision } from "../access/decide.js";
import { granteeOf, type Principal } from "../access/principal.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Clock } from "../shared/clock.js";
import { nestsDeeperThan } from "../json/depth.js";
import { isPlainObject } from "../json/merge-patch.js";
import { AppError, type FieldErrors } from "../server/errors.js";
import type { ReadContext, Store } from "../storage/database.js";
import { shownTokens, tokenEntry } from "./audit-entries.js";
import type { TokenCreation } from "./create.js";
import {
  ANY_EXPRESSION,
  WHOLE_EXPRESSION,
  evaluateDetokenizeExpression,
  parseDetokenizeExpression,
  type DetokenizeExpression,
} from "./detokenization.js";
import { MAX_BODY_DEPTH, type CreateTokenInput } from "./draft.js";
import { ExpressionError, type ExpressionEngine } from "./expressions.js";
import { presentToken } from "./present.js";
import type { TokenStore } from "./store.js";
import type { TokenRecord } from "./types.js";
import type { TokenView, Views } from "./views.js";

export const MAX_TOKENIZE_ITEMS = 1000;
export const MAX_DETOKENIZE_TOKENS = 100;
/**
 * Different expressions in one detokenization: each with filters is a liquidjs evaluation, and the body limit
 * alone would let one request ask for tens of thousands.
 */
export const MAX_DETOKENIZE_EXPRESSIONS = 1000;

export interface DetokenizeOptions {
  /** `token:read` for POST /detokenize, `token:use` for a reactor's args (DESIGN §8). */
  readonly permission?: "token:read" | "token:use";
  /** Whose use this is in the audit log: a reactor's invocation records itself with the tokens it used. */
  readonly recordAs?: { action: "reactor.react" | "reactor.react_async"; reactorId: string };
  readonly read?: ReadContext;
}

/** What reactors need of tokens: their arguments' expressions replaced by what they may use (detokenization.ts). */
export interface Detokenizer {
  detokenize(principal: Principal, body: unknown, options?: DetokenizeOptions): Promise<unknown>;
}

/** How the route reads and writes the token requests inside a tokenize body (it owns their schema). */
export interface TokenizeIo {
  /** Validates one token request found in the body. */
  parse(node: unknown, at: string): CreateTokenInput;
  /** Renders a created token where its request stood. */
  present(view: TokenView): unknown;
}

/** Tokenize and detokenize: many tokens in one request, the body's shape kept (wire-format §4.3). */
export function createBulk(deps: {
  store: Pick<Store, "write">;
  tokens: TokenStore;
  creation: TokenCreation;
  views: Views;
  audit: AuditRecorder;
  clock: Clock;
  expressions: ExpressionEngine;
}) {
  const { creation, audit } = deps;

  return {
    /**
     * Bulk create keeping the request's shape: an object with `type` is a token request, any other leaf becomes
     * a `token` token. One transaction: all or nothing.
     */
    tokenize: async (principal: Principal, body: unknown, io: TokenizeIo): Promise<unknown> => {
      const requests: { at: string; input: CreateTokenInput; primitive: boolean }[] = [];
      const problems: FieldErrors = {};
      const plan = (node: unknown, at: string): unknown => {
        if (Array.isArray(node)) return node.map((item, i) => plan(item, `${at}[${i}]`));
        if (isPlainObject(node)) {
          if (typeof node.type === "string") {
            try {
              requests.push({ at, input: io.parse(node, at), primitive: false });
            } catch (error) {
              if (!(error instanceof AppError) || error.errors === undefined) throw error;
              Object.assign(problems, error.errors);
              return null;
            }
            return requests.length - 1;
          }
          return Object.fromEntries(
            Object.entries(node).map(([k, v]) => [k, plan(v, at === "" ? k : `${at}.${k}`)]),
          );
        }
        if (node === null) return null;
        requests.push({ at, input: { type: "token", data: node }, primitive: true });
        return requests.length - 1;
      };
      checkBody(body);
      const shape = plan(body, "");
      if (Object.keys(problems).length > 0) throw AppError.validation(problems);
      if (requests.length > MAX_TOKENIZE_ITEMS) {
        throw AppError.validation({ body: [`must hold at most ${MAX_TOKENIZE_ITEMS} values to tokenize`] });
      }
      const keys = await creation.writeKeys(principal.tenantId);
      const prepared = requests.map(({ at, input }) => {
        try {
          return creation.prepare(principal, input, keys);
        } catch (error) {
          throw located(error, at);
        }
      });
      const views = await deps.store.write(async (write) => {
        await creation.lockDuplicates(write, principal, prepared);
        const created: TokenView[] = [];
        for (const [i, request] of prepared.entries()) {
          try {
            created.push(await creation.commit(write, principal, request, keys));
          } catch (error) {
            throw located(error, requests[i]!.at);
          }
        }
        return created;
      });
      const fill = (node: unknown): unknown => {
        if (typeof node === "number") {
          const view = views[node]!;
          return requests[node]!.primitive ? view.record.id : io.present(view);
        }
        if (Array.isArray(node)) return node.map(fill);
        if (isPlainObject(node))
          return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, fill(v)]));
        return node;
      };
      return fill(shape);
    },

    /**
     * Replaces the detokenization expressions anywhere in the body (detokenization.ts) with what the caller may
     * see of each token. A string that is exactly one expression becomes the value itself, its JSON type kept;
     * inside a longer string each is interpolated (complex values as JSON text).
     */
    detokenize: async (
      principal: Principal,
      body: unknown,
      { permission = "token:read", recordAs, read = {} }: DetokenizeOptions = {},
    ): Promise<unknown> => {
      const expressions = new Map<string, DetokenizeExpression>();
      const problems: string[] = [];
      /** Every different expression text met, valid or not: each is parsed once. */
      const seen = new Set<string>();
      const tooMany = () => seen.size > MAX_DETOKENIZE_EXPRESSIONS;
      const collect = (node: unknown): void => {
        // Parsing stops at the limit: the request is refused then, whatever the rest of the body holds.
        if (tooMany()) return;
        if (typeof node === "string") {
          for (const [whole, inner] of node.matchAll(ANY_EXPRESSION)) {
            if (seen.has(inner!)) continue;
            seen.add(inner!);
            try {
              expressions.set(inner!, parseDetokenizeExpression(inner!, deps.expressions));
            } catch (error) {
              if (!(error instanceof ExpressionError)) throw error;
              problems.push(`${whole} ${error.message}`);
            }
            if (tooMany()) return;
          }
        } else if (Array.isArray(node)) node.forEach(collect);
        else if (isPlainObject(node)) Object.values(node).forEach(collect);
      };
      checkBody(body);
      collect(body);
      if (tooMany()) {
        throw AppError.validation({
          body: [`may hold at most ${MAX_DETOKENIZE_EXPRESSIONS} different expressions`],
        });
      }
      if (problems.length > 0) throw AppError.validation({ body: problems });
      const ids = new Set([...expressions.values()].map((e) => e.id));
      if (ids.size > MAX_DETOKENIZE_TOKENS) {
        throw AppError.validation({ body: [`may reference at most ${MAX_DETOKENIZE_TOKENS} tokens`] });
      }
      const now = deps.clock.now().toISOString();
      const found = await deps.tokens.findManyByIds(principal.tenantId, [...ids], now, read.versions?.tokens);
      const byId = new Map(found.map((t) => [t.record.id, t]));
      const missing = [...ids].filter((id) => !byId.has(id));
      if (missing.length > 0) {
        throw AppError.validation({ body: missing.map((id) => `token ${id} does not exist`) });
      }
      const views = new Map<string, TokenView & { shown: { value: unknown } }>();
      const used: { record: TokenRecord; decision: Decision }[] = [];
      for (const stored of found) {
        const decision = decide(granteeOf(principal), permission, stored.record);
        if (decision === undefined) {
          const verb = permission === "token:read" ? "read" : "use";
          throw AppError.forbidden(`The Application may not ${verb} token ${stored.record.id}.`);
        }
        const view = await deps.views.ofStored(decision, stored);
        if (view.shown === undefined) {
          throw AppError.forbidden(
            `The Application's rule shows no data of token ${stored.record.id} (it redacts it, or masks it and the token has no mask).`,
          );
        }
        views.set(stored.record.id, { ...view, shown: view.shown });
        used.push({ record: stored.record, decision });
      }
      // Every expression is evaluated before anything is recorded or answered: a failing filter is a 400 that
      // shows nothing.
      const values = new Map<string, unknown>();
      for (const [text, expression] of expressions) {
        const view = views.get(expression.id)!;
        const subject = expression.form === "data" ? view.shown.value : presentToken(view);
        try {
          values.set(text, evaluateDetokenizeExpression(expression, subject, deps.expressions));
        } catch (error) {
          if (!(error instanceof ExpressionError)) throw error;
          problems.push(`{{${text}}} could not be evaluated: ${error.message}`);
        }
      }
      if (problems.length > 0) throw AppError.validation({ body: problems });
      const details = { tokens: shownTokens(used) };
      await audit.record([
        recordAs === undefined
          ? tokenEntry(principal, "token.detokenize", null, { details })
          : auditEntry(principal, recordAs.action, { type: "reactor", id: recordAs.reactorId }, { details }),
      ]);
      const replace = (node: unknown): unknown => {
        if (typeof node === "string") {
          const whole = WHOLE_EXPRESSION.exec(node);
          if (whole) return values.get(whole[1]!) ?? null;
          return node.replace(ANY_EXPRESSION, (_m, text: string) => asText(values.get(text)));
        }
        if (Array.isArray(node)) return node.map(replace);
        if (isPlainObject(node))
          return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, replace(v)]));
        return node;
      };
      return replace(body);
    },
  };
}

/** An interpolated value: text as is, anything else as JSON text, nothing (a path that selects none) as "". */
function asText(value: unknown): string {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function checkBody(body: unknown): void {
  if (body === undefined) throw AppError.validation({ body: ["is required"] });
  if (nestsDeeperThan(body, MAX_BODY_DEPTH)) {
    throw AppError.validation({ body: [`must not nest deeper than ${MAX_BODY_DEPTH} levels`] });
  }
}

/** A request's problems, keyed by where it stands in the body. */
function located(error: unknown, at: string): unknown {
  if (!(error instanceof AppError) || error.errors === undefined) return error;
  const errors =
    at === ""
      ? error.errors
      : Object.fromEntries(
          Object.entries(error.errors).map(([k, v]) => [k === "body" ? at : `${at}.${k}`, v]),
        );
  return AppError.validation(errors, error.detail);
}
