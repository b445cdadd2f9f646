import type { CardBrand } from "../shared/brands.js";
import type { JsonValue } from "../shared/json.js";
import {
  isFieldOptions,
  isFrameMessage,
  isHello,
  isUpdateOptions,
  PROTOCOL,
  type ElementType,
  type Endpoint,
  type FieldOptions,
  type FrameMessage,
  type ParentMessage,
  type Ref,
  type Result,
} from "../shared/protocol.js";
import { STYLE_PROPERTIES, type Style } from "../shared/style.js";
import { parseMask } from "../shared/text.js";
import { ElementsError } from "./errors.js";

/** What the frame answers a request with: a `send`'s result, or a `reveal`'s status. */
type Answer = Result | Extract<FrameMessage, { kind: "revealed" }>;

export interface ElementOptions {
  /** The accessible name of the field (its label for screen readers and the frame's title). */
  readonly label?: string;
  readonly placeholder?: string;
  readonly style?: Style;
  readonly disabled?: boolean;
  readonly readOnly?: boolean;
}

export interface CardVerificationCodeOptions extends ElementOptions {
  /** The brand the card number field reported, which sets the code's length (4 for American Express). */
  readonly cardBrand?: CardBrand;
}

export interface TextElementOptions extends ElementOptions {
  /** `9` a digit, `a` a letter, `*` either, `\` makes the next character literal: `999-99-9999`. */
  readonly mask?: string;
  /** Tested against the whole value; flags `i`, `m`, `s`, `u` only. */
  readonly validation?: RegExp;
  readonly maxLength?: number;
  /** An `autocomplete` token such as `name` or `postal-code`; `off` by default. */
  readonly autoComplete?: string;
  readonly inputMode?: "text" | "numeric" | "decimal" | "tel" | "email";
}

export type UpdateOptions = CardVerificationCodeOptions;

export interface ChangeEvent {
  readonly complete: boolean;
  readonly empty: boolean;
  readonly valid: boolean;
  readonly errors: readonly { readonly type: "incomplete" | "invalid" }[];
  /** Card number fields only. */
  readonly cardBrand?: CardBrand;
}

export interface KeydownEvent {
  readonly key: "Enter";
  readonly altKey: boolean;
  readonly ctrlKey: boolean;
  readonly metaKey: boolean;
  readonly shiftKey: boolean;
}

export interface ElementEvents {
  ready: Record<string, never>;
  change: ChangeEvent;
  focus: Record<string, never>;
  blur: Record<string, never>;
  keydown: KeydownEvent;
}
export type ElementEventName = keyof ElementEvents;

/** What an element needs from the instance that made it. */
export interface ElementHost {
  readonly vaultOrigin: string;
  readonly frameUrl: string;
  readonly key: string;
}

/** How long a frame has to say hello once it has loaded, before the origin is taken to be refused. */
const HELLO_GRACE_MS = 3_000;
const READY_TIMEOUT_MS = 30_000;
const SEND_TIMEOUT_MS = 60_000;

const TEXT_ONLY = ["mask", "validation", "maxLength", "autoComplete", "inputMode"] as const;

export function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The options as the frame takes them, or an error naming what is wrong. */
export function wireOptions(
  type: ElementType,
  options: TextElementOptions & CardVerificationCodeOptions,
): FieldOptions {
  for (const name of TEXT_ONLY) {
    if (type !== "text" && options[name] !== undefined) {
      throw new ElementsError("invalid-argument", `${name} is an option of text elements only.`);
    }
  }
  if (type !== "cardVerificationCode" && options.cardBrand !== undefined) {
    throw new ElementsError(
      "invalid-argument",
      "cardBrand is an option of cardVerificationCode elements only.",
    );
  }
  if (options.mask !== undefined && parseMask(options.mask) === undefined) {
    throw new ElementsError(
      "invalid-argument",
      "mask must be 1 to 64 characters with at least one 9, a or *.",
    );
  }
  const { validation, ...rest } = options;
  if (validation !== undefined && !(validation instanceof RegExp)) {
    throw new ElementsError("invalid-argument", "validation must be a RegExp.");
  }
  const wire: Record<string, unknown> = { ...rest };
  if (validation !== undefined) wire.validation = { source: validation.source, flags: validation.flags };
  for (const [name, value] of Object.entries(wire)) if (value === undefined) delete wire[name];
  if (!isFieldOptions(wire)) throw new ElementsError("invalid-argument", describeBadOptions(wire));
  return wire;
}

function describeBadOptions(options: Record<string, unknown>): string {
  if (options.style !== undefined) {
    return (
      "Invalid options. style takes base, complete, invalid and empty, each with the properties " +
      `${Object.keys(STYLE_PROPERTIES).join(", ")} and the pseudo-classes :hover, :focus, ::placeholder, ` +
      "::selection and :disabled; values use letters, digits, spaces and # % . , ( ) ' \" + - / only, and no " +
      "function but rgb(), rgba(), hsl(), hsla() and calc()."
    );
  }
  return (
    "Invalid options: label (1-200 characters), placeholder, style, disabled, readOnly, cardBrand, and for text " +
    "elements mask, validation (flags i, m, s, u), maxLength (1-256), autoComplete, inputMode."
  );
}

type Handler<E extends ElementEventName> = (event: ElementEvents[E]) => void;

/** One hosted field. Create it with `elements.createElement`, then `mount` it into the page. */
export class TesseraElement {
  readonly id = randomId();
  private options: FieldOptions;
  private iframe: HTMLIFrameElement | undefined;
  private port: MessagePort | undefined;
  private ready = false;
  /** While mounting: stops waiting for the frame, and settles `mount`'s promise. */
  private mounting:
    | {
        readonly cleanup: () => void;
        readonly resolve: () => void;
        readonly reject: (error: ElementsError) => void;
      }
    | undefined;
  private readonly handlers = new Map<ElementEventName, Set<(event: never) => void>>();
  private readonly requests = new Map<string, { settle: (answer: Answer | ElementsError) => void }>();

  constructor(
    readonly type: ElementType,
    options: TextElementOptions & CardVerificationCodeOptions,
    private readonly host: ElementHost,
  ) {
    this.options = wireOptions(type, options);
  }

  /** Whether the field is mounted and its frame has answered. */
  get mounted(): boolean {
    return this.ready;
  }

  /**
   * Puts the field's frame into the page element `target` (a selector or the element) and resolves once the
   * field is ready for input.
   */
  mount(target: string | HTMLElement): Promise<void> {
    if (this.iframe !== undefined) {
      return Promise.reject(new ElementsError("already-mounted", "The element is already mounted."));
    }
    const container = typeof target === "string" ? document.querySelector(target) : target;
    if (!(container instanceof HTMLElement)) {
      return Promise.reject(
        new ElementsError(
          "invalid-argument",
          typeof target === "string"
            ? `No element matches ${target}.`
            : "mount takes a selector or an HTMLElement.",
        ),
      );
    }
    if (!/^https?:\/\//.test(location.origin)) {
      return Promise.reject(
        new ElementsError("invalid-argument", "Elements needs a page served over http(s)."),
      );
    }
    const iframe = document.createElement("iframe");
    iframe.src = `${this.host.frameUrl}#origin=${encodeURIComponent(location.origin)}&element=${this.id}`;
    iframe.title = this.options.label ?? defaultTitle(this.type);
    iframe.referrerPolicy = "origin";
    iframe.setAttribute("scrolling", "no");
    Object.assign(iframe.style, {
      border: "0",
      width: "100%",
      height: "24px",
      display: "block",
      overflow: "hidden",
    });
    this.iframe = iframe;

    return new Promise<void>((resolve, reject) => {
      let hello = false;
      const timers: ReturnType<typeof setTimeout>[] = [];
      const fail = (error: ElementsError) => {
        reject(error);
        this.unmount();
      };
      const onMessage = (event: MessageEvent) => {
        const data: unknown = event.data;
        if (event.source !== iframe.contentWindow || event.origin !== this.host.vaultOrigin) return;
        if (hello || !isHello(data) || data.element !== this.id) return;
        hello = true;
        window.removeEventListener("message", onMessage);
        const channel = new MessageChannel();
        channel.port1.onmessage = (message: MessageEvent) => this.receive(message.data);
        this.port = channel.port1;
        // To the vault's origin only: had the frame navigated elsewhere, the port would not be delivered.
        iframe.contentWindow?.postMessage(
          { protocol: PROTOCOL, kind: "connect", element: this.id },
          this.host.vaultOrigin,
          [channel.port2],
        );
        this.post({ kind: "configure", type: this.type, key: this.host.key, options: this.options });
      };
      window.addEventListener("message", onMessage);
      iframe.addEventListener("load", () => {
        timers.push(
          setTimeout(() => {
            if (!hello) {
              fail(
                new ElementsError(
                  "frame-blocked",
                  `The field's frame did not start. Is ${location.origin} in the vault's TESSERA_ELEMENTS_ORIGINS?`,
                ),
              );
            }
          }, HELLO_GRACE_MS),
        );
      });
      timers.push(
        setTimeout(() => {
          if (!this.ready) fail(new ElementsError("timeout", "The field did not become ready in time."));
        }, READY_TIMEOUT_MS),
      );
      this.mounting = {
        cleanup: () => {
          window.removeEventListener("message", onMessage);
          for (const timer of timers) clearTimeout(timer);
        },
        resolve,
        reject,
      };
      container.appendChild(iframe);
    });
  }

  /** Changes options that may change while the field holds a value (not a text field's mask or validation). */
  update(options: UpdateOptions): void {
    const wire = wireOptions(this.type, options);
    if (!isUpdateOptions(wire)) {
      throw new ElementsError(
        "invalid-argument",
        "Only label, placeholder, style, disabled, readOnly and cardBrand change.",
      );
    }
    this.options = { ...this.options, ...wire };
    if (wire.label !== undefined && this.iframe !== undefined) this.iframe.title = wire.label;
    this.post({ kind: "update", options: wire });
  }

  clear(): void {
    this.post({ kind: "clear" });
  }

  focus(): void {
    this.post({ kind: "focus" });
  }

  blur(): void {
    this.post({ kind: "blur" });
  }

  /** Removes the frame; the element can be mounted again. */
  unmount(): void {
    const mounting = this.mounting;
    this.mounting = undefined;
    mounting?.cleanup();
    mounting?.reject(new ElementsError("not-mounted", "The element was unmounted before it was ready."));
    this.port?.close();
    this.port = undefined;
    this.iframe?.remove();
    this.iframe = undefined;
    this.ready = false;
    for (const [, request] of this.requests) {
      request.settle(
        new ElementsError("not-mounted", "The element was unmounted before the vault answered."),
      );
    }
    this.requests.clear();
  }

  on<E extends ElementEventName>(name: E, handler: Handler<E>): () => void {
    const set = this.handlers.get(name) ?? new Set();
    set.add(handler);
    this.handlers.set(name, set);
    return () => this.off(name, handler);
  }

  off<E extends ElementEventName>(name: E, handler: Handler<E>): void {
    this.handlers.get(name)?.delete(handler);
  }

  /**
   * Shows a token's data in this element, which must be a `text` element created with `readOnly: true`, and the
   * library initialised with a session key that may read the token (docs/sessions.md). The frame reads the token
   * and shows it; this page never holds the value. `path` names a member of complex data (`"number"`,
   * `"address.city"`, `"lines.0"`). Resolves once it is shown; rejects with `api-error` and the status when the
   * vault refuses (401, 404…).
   *
   * @example
   * const ssn = elements.createElement("text", { readOnly: true, label: "SSN" });
   * await ssn.mount("#ssn");
   * await ssn.setValueRef(tokenId);
   */
  setValueRef(token: string, path?: string): Promise<void> {
    if (!this.ready) return Promise.reject(new ElementsError("not-mounted", "The element is not mounted."));
    if (typeof token !== "string" || token.length === 0) {
      return Promise.reject(new ElementsError("invalid-argument", "Give the id of a token."));
    }
    const segments = (path ?? "")
      .split(".")
      .filter((segment) => segment.length > 0)
      .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
    return this.ask((request) => ({ kind: "reveal", request, token, path: segments })).then((answer) => {
      if (answer.kind === "result") {
        if ("error" in answer) throw new ElementsError(answer.error.code, answer.error.message);
        throw new ElementsError("bad-response", "The frame answered a reveal with a request's result.");
      }
      if (answer.status !== 200) {
        throw new ElementsError("api-error", `The vault refused to show the token (${answer.status}).`, {
          status: answer.status,
        });
      }
    });
  }

  /** Sends a request through this element's frame; the library calls it for `tokenize` and `tokens.create`. */
  send(endpoint: Endpoint, body: JsonValue, refs: readonly Ref[]): Promise<Result> {
    return this.ask((request) => ({ kind: "send", request, endpoint, body, refs: [...refs] })).then(
      (answer) => {
        if (answer.kind !== "result")
          throw new ElementsError("bad-response", "The frame answered a request oddly.");
        return answer;
      },
    );
  }

  /** Posts the message `build` makes for a new request id, and settles with the frame's answer to it. */
  private ask(build: (request: string) => ParentMessage): Promise<Answer> {
    if (!this.ready) return Promise.reject(new ElementsError("not-mounted", "The element is not mounted."));
    const request = randomId();
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.requests.delete(request);
        reject(new ElementsError("timeout", "The vault did not answer in time."));
      }, SEND_TIMEOUT_MS);
      this.requests.set(request, {
        settle: (result) => {
          clearTimeout(timer);
          this.requests.delete(request);
          if (result instanceof ElementsError) reject(result);
          else resolve(result);
        },
      });
      this.post(build(request));
    });
  }

  private post(message: ParentMessage): void {
    this.port?.postMessage(message);
  }

  private receive(data: unknown): void {
    if (!isFrameMessage(data)) return;
    const message: FrameMessage = data;
    switch (message.kind) {
      case "ready":
        if (this.ready) return;
        this.ready = true;
        this.mounting?.cleanup();
        this.mounting?.resolve();
        this.mounting = undefined;
        return this.emit("ready", {});
      case "change": {
        const { kind: _kind, ...state } = message;
        return this.emit("change", state);
      }
      case "focus":
      case "blur":
        return this.emit(message.kind, {});
      case "keydown": {
        const { kind: _kind, ...event } = message;
        return this.emit("keydown", event);
      }
      case "resize":
        if (this.iframe !== undefined && message.height > 0) this.iframe.style.height = `${message.height}px`;
        return;
      case "result":
      case "revealed":
        return this.requests.get(message.request)?.settle(message);
    }
  }

  private emit<E extends ElementEventName>(name: E, event: ElementEvents[E]): void {
    for (const handler of this.handlers.get(name) ?? []) {
      try {
        (handler as Handler<E>)(event);
      } catch (error) {
        // A throwing handler of the page must not stop the others, nor the element.
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}

function defaultTitle(type: ElementType): string {
  switch (type) {
    case "cardNumber":
      return "Card number";
    case "cardExpirationDate":
      return "Expiration date";
    case "cardVerificationCode":
      return "Security code";
    case "text":
      return "Text";
  }
}

/** A part of an expiration date, for `data.expiration_month` and `data.expiration_year`. */
export class ElementPart {
  constructor(
    readonly element: TesseraElement,
    readonly part: "month" | "year",
  ) {}
}

export class CardExpirationDateElement extends TesseraElement {
  month(): ElementPart {
    return new ElementPart(this, "month");
  }

  year(): ElementPart {
    return new ElementPart(this, "year");
  }
}
