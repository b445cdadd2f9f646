import { isJsonValue, JSON_LIMITS, type JsonValue } from "../shared/json.js";
import type { Endpoint, Ref, Result } from "../shared/protocol.js";
import {
  CardExpirationDateElement,
  ElementPart,
  TesseraElement,
  type CardVerificationCodeOptions,
  type ElementHost,
  type ElementOptions,
  type TextElementOptions,
} from "./element.js";
import { ElementsError } from "./errors.js";

export interface InitOptions {
  /** Where the vault is, for example `https://vault.example.com`; the fields are served from there. */
  readonly baseUrl: string;
  /** A public Application's key (or a session key): it is sent by the fields' frames, never by this page. */
  readonly key: string;
}

/** A body for `tokenize` or `tokens.create`: JSON with elements (or an expiry's parts) where values go. */
export type ElementsBody = unknown;

/** Prefixes of keys that must never be in a browser page. */
const SERVER_KEY_PREFIXES = ["key_prv_", "key_mgt_"];

/** Fields of one vault and key, and the requests made with their values. */
export class Elements {
  private readonly host: ElementHost;
  private readonly made = new Set<TesseraElement>();

  readonly tokens = {
    /** `POST /tokens` with the elements' values; resolves with what the vault returns to the key. */
    create: (body: ElementsBody): Promise<unknown> => this.request("tokens", body),
  };

  constructor(options: InitOptions) {
    if (typeof options?.baseUrl !== "string" || typeof options.key !== "string") {
      throw new ElementsError("invalid-argument", "init takes { baseUrl, key }.");
    }
    // Sent in a header by the frames: visible ASCII only.
    if (!/^[\x21-\x7e]{1,512}$/.test(options.key)) {
      throw new ElementsError(
        "invalid-argument",
        "key must be an API key: 1 to 512 visible ASCII characters.",
      );
    }
    if (SERVER_KEY_PREFIXES.some((prefix) => options.key.startsWith(prefix))) {
      throw new ElementsError(
        "invalid-argument",
        "This is a private or management key: anyone who opens the page could read it. Use a public Application's key.",
      );
    }
    let base: URL;
    try {
      base = new URL(options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`);
    } catch {
      throw new ElementsError("invalid-argument", "baseUrl must be an absolute http(s) URL.");
    }
    if (base.protocol !== "https:" && base.protocol !== "http:") {
      throw new ElementsError("invalid-argument", "baseUrl must be an absolute http(s) URL.");
    }
    this.host = {
      vaultOrigin: base.origin,
      frameUrl: new URL("elements/v1/frame.html", base).href,
      key: options.key,
    };
  }

  createElement(type: "cardNumber", options?: ElementOptions): TesseraElement;
  createElement(type: "cardExpirationDate", options?: ElementOptions): CardExpirationDateElement;
  createElement(type: "cardVerificationCode", options?: CardVerificationCodeOptions): TesseraElement;
  createElement(type: "text", options?: TextElementOptions): TesseraElement;
  createElement(
    type: "cardNumber" | "cardExpirationDate" | "cardVerificationCode" | "text",
    options: TextElementOptions & CardVerificationCodeOptions = {},
  ): TesseraElement {
    let element: TesseraElement;
    switch (type) {
      case "cardExpirationDate":
        element = new CardExpirationDateElement(type, options, this.host);
        break;
      case "cardNumber":
      case "cardVerificationCode":
      case "text":
        element = new TesseraElement(type, options, this.host);
        break;
      default:
        throw new ElementsError("invalid-argument", `Unknown element type ${String(type)}.`);
    }
    this.made.add(element);
    return element;
  }

  /** `POST /tokenize` with the elements' values; resolves with what the vault returns to the key. */
  tokenize(body: ElementsBody): Promise<unknown> {
    return this.request("tokenize", body);
  }

  private async request(endpoint: Endpoint, body: ElementsBody): Promise<unknown> {
    const refs: Ref[] = [];
    const json = this.toWire(body, [], refs, 0);
    if (!isJsonValue(json))
      throw new ElementsError("invalid-argument", "The body is not JSON within the limits.");
    // The frame of the first referred element sends; with none referred, any mounted element of this instance.
    const sender =
      refs.length > 0
        ? this.elementById(refs[0]!.element)
        : [...this.made].find((element) => element.mounted);
    if (sender === undefined || !sender.mounted) {
      throw new ElementsError("not-mounted", "Mount the elements before sending their values.");
    }
    return this.outcome(await sender.send(endpoint, json, refs));
  }

  private outcome(result: Result): unknown {
    if ("error" in result) {
      throw new ElementsError(result.error.code, result.error.message, {
        ...(result.elements !== undefined && { elements: result.elements }),
      });
    }
    if (result.status >= 400) {
      const body = result.body as { detail?: unknown; title?: unknown } | null;
      const text =
        typeof body?.detail === "string" ? body.detail : typeof body?.title === "string" ? body.title : "";
      throw new ElementsError("api-error", `The vault answered ${result.status}. ${text}`.trim(), {
        status: result.status,
        body: result.body,
      });
    }
    return result.body;
  }

  private elementById(id: string): TesseraElement | undefined {
    return [...this.made].find((element) => element.id === id);
  }

  /** A JSON copy of the body with every element (or part) replaced by `null` and its place recorded. */
  private toWire(
    value: unknown,
    path: (string | number)[],
    refs: Ref[],
    depth: number,
  ): JsonValue | undefined {
    if (depth > JSON_LIMITS.depth)
      throw new ElementsError("invalid-argument", "The body is nested too deeply.");
    if (value instanceof TesseraElement || value instanceof ElementPart) {
      const element = value instanceof ElementPart ? value.element : value;
      if (!this.made.has(element)) {
        throw new ElementsError(
          "invalid-argument",
          "An element of another Elements instance is in the body.",
        );
      }
      if (path.length === 0)
        throw new ElementsError("invalid-argument", "The body cannot be an element itself.");
      refs.push({
        path: [...path],
        element: element.id,
        part: value instanceof ElementPart ? value.part : "value",
      });
      return null;
    }
    if (value === null || typeof value === "string" || typeof value === "boolean") return value;
    if (typeof value === "number") return Number.isFinite(value) ? value : null;
    if (value instanceof Date) return value.toISOString();
    if (Array.isArray(value)) {
      return value.map((item, index) => this.toWire(item, [...path, index], refs, depth + 1) ?? null);
    }
    if (typeof value === "object") {
      const out: Record<string, JsonValue> = {};
      for (const [key, member] of Object.entries(value)) {
        const wired = this.toWire(member, [...path, key], refs, depth + 1);
        if (wired !== undefined) out[key] = wired;
      }
      return out;
    }
    // undefined and functions are left out, as JSON.stringify leaves them out.
    return undefined;
  }
}

/** The entry point: `const elements = TesseraElements.init({ baseUrl, key })`. */
export function init(options: InitOptions): Elements {
  return new Elements(options);
}
