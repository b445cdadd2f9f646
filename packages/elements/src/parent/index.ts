/**
 * `@tessera/elements`: hosted card and text fields. The page creates and mounts fields; each is an iframe served
 * by the vault, and the values typed into them go to the vault and nowhere else (docs/elements.md).
 *
 * @example
 * const elements = TesseraElements.init({ baseUrl: "https://vault.example.com", key: "key_pub_…" });
 * const card = elements.createElement("cardNumber");
 * await card.mount("#card-number");
 * const token = await elements.tokenize({ type: "card_number", data: card });
 */
import { init } from "./elements.js";

export const TesseraElements = { init };
export { init, Elements, type InitOptions, type ElementsBody } from "./elements.js";
export {
  TesseraElement,
  CardExpirationDateElement,
  ElementPart,
  type ElementOptions,
  type CardVerificationCodeOptions,
  type TextElementOptions,
  type UpdateOptions,
  type ChangeEvent,
  type KeydownEvent,
  type ElementEvents,
  type ElementEventName,
} from "./element.js";
export { ElementsError, type ElementsErrorCode } from "./errors.js";
export type { CardBrand } from "../shared/brands.js";
export type { Style, StyleRules, StyleDeclarations } from "../shared/style.js";
