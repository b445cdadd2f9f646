/** The brands Elements names; a card of any other brand is `unknown` and takes the generic lengths. */
export const CARD_BRANDS = [
  "visa",
  "mastercard",
  "american-express",
  "discover",
  "diners-club",
  "jcb",
  "unionpay",
  "maestro",
] as const;
export type CardBrand = (typeof CARD_BRANDS)[number] | "unknown";

/** A card field's error: not yet a whole value, or one that cannot become valid. */
export type FieldError = { readonly type: "incomplete" } | { readonly type: "invalid" };
