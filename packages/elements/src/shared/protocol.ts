import { CARD_BRANDS, type CardBrand } from "./brands.js";
import { isJsonValue, type JsonValue } from "./json.js";
import {
  array,
  boolean,
  integer,
  literal,
  object,
  oneOf,
  PROTOTYPE_KEYS,
  string,
  type Check,
  type Checked,
} from "./shape.js";
import { isStyle } from "./style.js";
import { MAX_MASK_LENGTH, MAX_TEXT_LENGTH } from "./text.js";

/**
 * The frame protocol (docs/elements.md#the-frame-protocol). Three kinds of traffic:
 *
 * 1. The handshake, over `window.postMessage` with origin checks on both sides: the frame says `hello` to its
 *    parent (to the origin named in its URL only), the parent answers `connect` (to the vault's origin only) and
 *    hands over one end of a `MessageChannel`.
 * 2. Everything else between the parent and a frame, over that channel.
 * 3. Between frames of one page, over `window.postMessage` to the vault's own origin: the frame that sends a
 *    request `collect`s the values it refers to from its sibling frames. A value never leaves the vault's origin.
 *
 * Every message is checked against these shapes exactly (no member more, none less, every value bounded); a
 * message that fails is ignored, whoever sent it.
 */

export const PROTOCOL = "tessera-elements/1";

export const ELEMENT_TYPES = ["cardNumber", "cardExpirationDate", "cardVerificationCode", "text"] as const;
export type ElementType = (typeof ELEMENT_TYPES)[number];

/** 128 random bits in hex: element ids and request ids. */
const isId = string({ min: 32, max: 32, pattern: /^[0-9a-f]{32}$/ });
const isProtocol = literal(PROTOCOL);
const isElementType = literal(...ELEMENT_TYPES);
export const isCardBrand: Check<CardBrand> = literal(...CARD_BRANDS, "unknown");
const isBodyJson: Check<JsonValue> = (value): value is JsonValue => isJsonValue(value);

// --- handshake (window.postMessage) -------------------------------------------------------------------------

export const isHello = object({ protocol: isProtocol, kind: literal("hello"), element: isId });
export type Hello = Checked<typeof isHello>;

/** Carries one port: the frame's end of its channel to the parent. */
export const isConnect = object({ protocol: isProtocol, kind: literal("connect"), element: isId });
export type Connect = Checked<typeof isConnect>;

// --- parent to frame (channel) ------------------------------------------------------------------------------

const isLabel = string({ min: 1, max: 200 });
const isPlaceholder = string({ max: 200 });

/** Options that may change while the field holds a value: none of them can be used to test the value. */
const updatableOptions = {
  label: isLabel,
  placeholder: isPlaceholder,
  style: isStyle,
  disabled: boolean,
  readOnly: boolean,
  cardBrand: isCardBrand,
};
export const isUpdateOptions = object({}, updatableOptions);
export type UpdateOptions = Checked<typeof isUpdateOptions>;

/**
 * A `text` field's mask and validation are fixed when it is configured: a page that could change the pattern
 * after the value is typed could learn the value one `valid` flag at a time.
 */
export const isFieldOptions = object(
  {},
  {
    ...updatableOptions,
    autoComplete: string({ min: 1, max: 100, pattern: /^[a-z0-9 -]+$/ }),
    inputMode: literal("text", "numeric", "decimal", "tel", "email"),
    mask: string({ min: 1, max: MAX_MASK_LENGTH }),
    maxLength: integer(1, MAX_TEXT_LENGTH),
    validation: object({
      source: string({ min: 1, max: 512 }),
      flags: string({ max: 4, pattern: /^[imsu]*$/ }),
    }),
  },
);
export type FieldOptions = Checked<typeof isFieldOptions>;

export const isConfigure = object({
  kind: literal("configure"),
  type: isElementType,
  /** The public (or session) key the frame sends requests with. */
  key: string({ min: 1, max: 512, pattern: /^[\x21-\x7e]+$/ }),
  options: isFieldOptions,
});

const isMemberName: Check<string> = (value): value is string =>
  typeof value === "string" && value.length >= 1 && value.length <= 256 && !PROTOTYPE_KEYS.has(value);
const isPathSegment = oneOf(isMemberName, integer(0, 99_999));
export const isRef = object({
  /** Where in the body the value goes: member names and array indexes from the root. */
  path: array(isPathSegment, 32, 1),
  element: isId,
  /** `month` and `year` are the parts of an expiration date; everything else is `value`. */
  part: literal("value", "month", "year"),
});
export type Ref = Checked<typeof isRef>;

export const ENDPOINTS = ["tokenize", "tokens"] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/**
 * Sends `body` to `POST /tokenize` or `POST /tokens` of the vault the frame came from, with the referred values
 * put in: the page names an endpoint, never a URL.
 */
export const isSend = object({
  kind: literal("send"),
  request: isId,
  endpoint: literal(...ENDPOINTS),
  body: isBodyJson,
  refs: array(isRef, 64),
});
export type Send = Checked<typeof isSend>;

/** A token id as the vault takes one: 1 to 400 characters, no control character. */
const isTokenId: Check<string> = (value): value is string =>
  typeof value === "string" &&
  value.length >= 1 &&
  value.length <= 400 &&
  ![...value].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);

/**
 * Shows a token's data, or the member `path` names in it, in a read-only `text` field: the frame reads the token
 * with its key (a session key) from the vault it came from, and the page is told only the answer's status.
 */
export const isReveal = object({
  kind: literal("reveal"),
  request: isId,
  token: isTokenId,
  path: array(isPathSegment, 32),
});
export type Reveal = Checked<typeof isReveal>;

export const isParentMessage = oneOf(
  isConfigure,
  isReveal,
  object({ kind: literal("update"), options: isUpdateOptions }),
  object({ kind: literal("clear") }),
  object({ kind: literal("focus") }),
  object({ kind: literal("blur") }),
  isSend,
);
export type ParentMessage = Checked<typeof isParentMessage>;

// --- frame to parent (channel) ------------------------------------------------------------------------------

export const isFieldError = object({ type: literal("incomplete", "invalid") });

export const isChange = object(
  {
    kind: literal("change"),
    complete: boolean,
    empty: boolean,
    valid: boolean,
    errors: array(isFieldError, 2),
  },
  { cardBrand: isCardBrand },
);
export type Change = Checked<typeof isChange>;

export const ERROR_CODES = [
  /** The body or its references break the placement rules (docs/elements.md#where-a-value-may-go). */
  "invalid-request",
  /** A referred field is empty, incomplete or invalid; `elements` names them. */
  "incomplete-elements",
  /** A referred field did not answer: not mounted in this page. */
  "element-missing",
  /** The vault could not be reached. */
  "network",
  /** The vault answered something other than JSON. */
  "bad-response",
  /** The vault's answer holds an entered value; it is not handed to the page. */
  "response-withheld",
] as const;
export type FrameErrorCode = (typeof ERROR_CODES)[number];

export const isResult = oneOf(
  object({ kind: literal("result"), request: isId, status: integer(100, 599), body: isBodyJson }),
  object(
    {
      kind: literal("result"),
      request: isId,
      error: object({ code: literal(...ERROR_CODES), message: string({ max: 500 }) }),
    },
    { elements: array(isId, 64, 1) },
  ),
);
export type Result = Checked<typeof isResult>;

export const isFrameMessage = oneOf(
  object({ kind: literal("ready") }),
  isChange,
  object({ kind: literal("focus") }),
  object({ kind: literal("blur") }),
  object({
    kind: literal("keydown"),
    key: literal("Enter"),
    altKey: boolean,
    ctrlKey: boolean,
    metaKey: boolean,
    shiftKey: boolean,
  }),
  object({ kind: literal("resize"), height: integer(0, 2000) }),
  isResult,
  /** The vault's status for a `reveal`: 200 when the value is shown (in the frame only), else the error status. */
  object({ kind: literal("revealed"), request: isId, status: integer(100, 599) }),
);
export type FrameMessage = Checked<typeof isFrameMessage>;

// --- frame to frame (window.postMessage, the vault's origin only) -------------------------------------------

export const isCollect = object({
  protocol: isProtocol,
  kind: literal("collect"),
  request: isId,
  elements: array(isId, 64, 1),
});
export type Collect = Checked<typeof isCollect>;

export const isFieldValue = oneOf(
  object({ type: literal("cardNumber"), value: string({ min: 12, max: 19, pattern: /^\d+$/ }) }),
  object({ type: literal("cardExpirationDate"), month: integer(1, 12), year: integer(2000, 2999) }),
  object({ type: literal("cardVerificationCode"), value: string({ min: 3, max: 4, pattern: /^\d+$/ }) }),
  object({ type: literal("text"), value: string({ max: MAX_TEXT_LENGTH }) }),
);
export type FieldValue = Checked<typeof isFieldValue>;

export const isCollected = oneOf(
  object({
    protocol: isProtocol,
    kind: literal("collected"),
    request: isId,
    element: isId,
    value: isFieldValue,
  }),
  object({
    protocol: isProtocol,
    kind: literal("collected"),
    request: isId,
    element: isId,
    refused: literal("empty", "incomplete", "invalid"),
  }),
);
export type Collected = Checked<typeof isCollected>;
