import {
  caretAfter,
  isSignificant,
  readField,
  sameState,
  type FieldRules,
  type PublicState,
  type Reading,
} from "../shared/field.js";
import {
  isCollect,
  isCollected,
  isConnect,
  isParentMessage,
  PROTOCOL,
  type ElementType,
  type FieldOptions,
  type FrameMessage,
  type ParentMessage,
  type Reveal,
  type UpdateOptions,
} from "../shared/protocol.js";
import { parseMask, validationPattern } from "../shared/text.js";
import { createSender } from "./sender.js";
import { applyStyle } from "./styles.js";

/**
 * One field in its own frame, served by the vault. The page that embeds it talks to it only through the channel
 * set up in the handshake below; the value stays in this document, and leaves it only towards the vault's own
 * origin: to a sibling frame that sends a request, or in that request (docs/elements.md#threat-model).
 */

const LABELS: Record<ElementType, string> = {
  cardNumber: "Card number",
  cardExpirationDate: "Expiration date (MM / YY)",
  cardVerificationCode: "Security code",
  text: "Text",
};
const PLACEHOLDERS: Record<ElementType, string> = {
  cardNumber: "1234 1234 1234 1234",
  cardExpirationDate: "MM / YY",
  cardVerificationCode: "CVC",
  text: "",
};
const AUTOCOMPLETE: Record<Exclude<ElementType, "text">, string> = {
  cardNumber: "cc-number",
  cardExpirationDate: "cc-exp",
  cardVerificationCode: "cc-csc",
};

/** The page's origin as the frame's URL names it: `http(s)://host[:port]` exactly, else nothing. */
function originParameter(value: string | null): string | undefined {
  if (value === null) return undefined;
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && url.origin === value
      ? value
      : undefined;
  } catch {
    return undefined;
  }
}

function start(): void {
  const parameters = new URLSearchParams(location.hash.slice(1));
  const parentOrigin = originParameter(parameters.get("origin"));
  const element = parameters.get("element");
  if (parentOrigin === undefined || element === null || !/^[0-9a-f]{32}$/.test(element)) return;
  if (window.parent === window) return;
  // Where the browser says who embeds the frame (Chromium, WebKit), it must be the origin the URL names. CSP
  // frame-ancestors has already refused pages whose origin the vault does not allow.
  const ancestors = location.ancestorOrigins as DOMStringList | undefined;
  if (ancestors !== undefined && ancestors.length > 0 && ancestors[0] !== parentOrigin) return;

  const input = document.getElementById("field") as HTMLInputElement;
  const label = document.getElementById("label") as HTMLLabelElement;
  const sheet = new CSSStyleSheet();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];

  let port: MessagePort | undefined;
  let key: string | undefined;
  let rules: FieldRules | undefined;
  let reading: Reading | undefined;
  let told: PublicState | undefined;
  let focused = false;
  let touched = false;
  /** Holds a token's data shown by `reveal`: never read, never told about, never collected. */
  let revealed = false;
  const apiBase = new URL("../../", location.href);

  const post = (message: FrameMessage) => port?.postMessage(message);
  const current = (): Reading => reading ?? readField("", rules ?? { type: "text" }, new Date());
  const sender = createSender({
    element,
    read: current,
    key: () => key,
    apiBase,
    reply: post,
  });

  function refresh(): void {
    if (rules === undefined || revealed) return;
    const caret = input.selectionStart ?? input.value.length;
    const before = [...input.value.slice(0, caret)].filter((char) => isSignificant(rules!.type, char)).length;
    reading = readField(input.value, rules, new Date());
    if (input.value !== reading.shown) {
      input.value = reading.shown;
      if (document.activeElement === input) {
        const at = caretAfter(rules.type, reading.shown, before);
        input.setSelectionRange(at, at);
      }
    }
    const { state } = reading;
    input.classList.toggle("is-empty", state.empty);
    input.classList.toggle("is-complete", state.complete);
    input.classList.toggle("is-invalid", !state.valid);
    // Incomplete is an error to announce only once the shopper has left the field.
    const invalid = !state.valid || (touched && !focused && !state.empty && !state.complete);
    input.setAttribute("aria-invalid", String(invalid));
    // Told only when something a page may know changes, not at every keystroke: the page learns no typing rhythm.
    if (told === undefined || !sameState(told, state)) {
      told = state;
      post({ kind: "change", ...state, errors: [...state.errors] });
    }
  }

  function applyOptions(options: UpdateOptions): void {
    if (rules === undefined) return;
    if (options.label !== undefined) label.textContent = options.label;
    if (options.placeholder !== undefined) input.placeholder = options.placeholder;
    if (options.style !== undefined) applyStyle(sheet, options.style);
    if (options.disabled !== undefined) input.disabled = options.disabled;
    if (options.readOnly !== undefined) {
      // A revealed value is never left in a field the shopper can edit: its state would then be told.
      if (!options.readOnly && revealed) forget();
      input.readOnly = options.readOnly;
    }
    if (options.cardBrand !== undefined && rules.type === "cardVerificationCode") {
      rules = { ...rules, cardBrand: options.cardBrand };
      refresh();
    }
  }

  function configure(type: ElementType, options: FieldOptions): boolean {
    const mask = options.mask === undefined ? undefined : parseMask(options.mask);
    const validation =
      options.validation === undefined
        ? undefined
        : validationPattern(options.validation.source, options.validation.flags);
    if (
      (options.mask !== undefined && mask === undefined) ||
      (options.validation !== undefined && !validation)
    ) {
      return false;
    }
    rules = {
      type,
      ...(options.cardBrand !== undefined && { cardBrand: options.cardBrand }),
      ...(mask !== undefined && { mask }),
      ...(validation !== undefined && { validation }),
      ...(options.maxLength !== undefined && { maxLength: options.maxLength }),
    };
    input.setAttribute(
      "autocomplete",
      (type === "text" ? options.autoComplete : AUTOCOMPLETE[type]) ?? "off",
    );
    input.inputMode = type === "text" ? (options.inputMode ?? "text") : "numeric";
    label.textContent = LABELS[type];
    input.placeholder = PLACEHOLDERS[type];
    applyOptions(options);
    refresh();
    return true;
  }

  function onParentMessage(event: MessageEvent): void {
    const message: unknown = event.data;
    if (!isParentMessage(message)) return;
    handle(message);
  }

  function handle(message: ParentMessage): void {
    if (message.kind === "configure") {
      if (rules !== undefined || !configure(message.type, message.options)) return;
      key = message.key;
      post({ kind: "ready" });
      reportHeight();
      return;
    }
    if (rules === undefined) return;
    switch (message.kind) {
      case "update":
        return applyOptions(message.options);
      case "clear":
        forget();
        input.value = "";
        return refresh();
      case "reveal":
        void reveal(message);
        return;
      case "focus":
        return input.focus();
      case "blur":
        return input.blur();
      case "send":
        void sender.send(message);
        return;
    }
  }

  function forget(): void {
    if (!revealed) return;
    revealed = false;
    input.value = "";
  }

  /**
   * Reads the token with the configured key (a session key) from the vault this frame came from and shows the
   * value in this read-only text field. The page learns the status only: no change event, no collect answer.
   */
  async function reveal(message: Reveal): Promise<void> {
    const refuse = (code: "invalid-request" | "network" | "bad-response", text: string) =>
      post({ kind: "result", request: message.request, error: { code, message: text } });
    if (rules?.type !== "text" || !input.readOnly || key === undefined) {
      return refuse("invalid-request", "Only a read-only text element shows a token's data.");
    }
    let response: Response;
    try {
      response = await fetch(new URL(`tokens/${encodeURIComponent(message.token)}`, apiBase), {
        headers: { "SVC-API-KEY": key },
        credentials: "omit",
        cache: "no-store",
      });
    } catch {
      return refuse("network", "The vault could not be reached.");
    }
    if (!response.ok) return post({ kind: "revealed", request: message.request, status: response.status });
    let value: unknown;
    try {
      value = (await response.json()) as unknown;
    } catch {
      return refuse("bad-response", "The vault answered something other than JSON.");
    }
    for (const segment of ["data", ...message.path]) {
      value =
        typeof value === "object" && value !== null && Object.hasOwn(value, segment)
          ? (value as Record<string | number, unknown>)[segment]
          : undefined;
    }
    if (typeof value !== "string" && typeof value !== "number") {
      return refuse(
        "invalid-request",
        "The token shows no text there to this key (redacted, masked away, or not a value).",
      );
    }
    revealed = true;
    input.value = String(value);
    post({ kind: "revealed", request: message.request, status: 200 });
  }

  function reportHeight(): void {
    post({ kind: "resize", height: Math.min(2000, Math.ceil(input.getBoundingClientRect().height)) });
  }

  window.addEventListener("message", (event) => {
    const data: unknown = event.data;
    if (event.source === window.parent && event.origin === parentOrigin) {
      // The handshake, once: the page's end of the channel is the only way in from then on.
      if (port !== undefined || !isConnect(data) || data.element !== element || event.ports.length !== 1)
        return;
      port = event.ports[0]!;
      port.onmessage = onParentMessage;
      return;
    }
    if (event.origin !== location.origin || !isSiblingFrame(event.source)) return;
    if (isCollect(data)) {
      if (rules === undefined) return;
      const answer = sender.answer(data, current());
      if (answer !== undefined) (event.source as Window).postMessage(answer, location.origin);
    } else if (isCollected(data)) {
      sender.collected(data);
    }
  });

  input.addEventListener("beforeinput", (event) => {
    // A backspace right after a separator removes the digit before it, not the separator formatting puts back.
    if (rules === undefined || event.inputType !== "deleteContentBackward") return;
    const at = input.selectionStart;
    if (at === null || at !== input.selectionEnd) return;
    let from = at;
    while (from > 0 && !isSignificant(rules.type, input.value[from - 1]!)) from--;
    if (from !== at && from > 0) input.setSelectionRange(from, from);
  });
  input.addEventListener("input", refresh);
  input.addEventListener("focus", () => {
    focused = true;
    post({ kind: "focus" });
  });
  input.addEventListener("blur", () => {
    focused = false;
    touched = true;
    refresh();
    post({ kind: "blur" });
  });
  input.addEventListener("keydown", (event) => {
    // Enter only: any other key would tell the page what is being typed.
    if (event.key !== "Enter") return;
    post({
      kind: "keydown",
      key: "Enter",
      altKey: event.altKey,
      ctrlKey: event.ctrlKey,
      metaKey: event.metaKey,
      shiftKey: event.shiftKey,
    });
  });
  new ResizeObserver(reportHeight).observe(input);

  window.parent.postMessage({ protocol: PROTOCOL, kind: "hello", element }, parentOrigin);
}

/** Another frame of this page from the vault's origin, loaded from this same frame document. */
function isSiblingFrame(source: MessageEventSource | null): boolean {
  if (source === null || source === window || source === window.parent) return false;
  try {
    const frame = source as Window;
    return frame.parent === window.parent && frame.location.pathname === location.pathname;
  } catch {
    return false;
  }
}

start();
