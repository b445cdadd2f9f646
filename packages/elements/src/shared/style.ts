import { object, type Check } from "./shape.js";

/**
 * What a page may style inside a field: these properties, per state and pseudo-class, with values from a small
 * character set. No selectors of the page's choosing (a selector on the value is how CSS exfiltrates input), no
 * `url()` or other functions that fetch (the frame's CSP would block them anyway), no custom fonts.
 */
export const STYLE_PROPERTIES = {
  backgroundColor: "background-color",
  caretColor: "caret-color",
  color: "color",
  fontFamily: "font-family",
  fontSize: "font-size",
  fontSmooth: "-webkit-font-smoothing",
  fontStyle: "font-style",
  fontVariant: "font-variant",
  fontWeight: "font-weight",
  letterSpacing: "letter-spacing",
  lineHeight: "line-height",
  padding: "padding",
  textAlign: "text-align",
  textDecoration: "text-decoration",
  textShadow: "text-shadow",
  textTransform: "text-transform",
} as const;
export type StyleProperty = keyof typeof STYLE_PROPERTIES;

export const STYLE_PSEUDOS = [":hover", ":focus", "::placeholder", "::selection", ":disabled"] as const;
export type StylePseudo = (typeof STYLE_PSEUDOS)[number];

/** The field's states: always, when complete, when invalid, when empty. */
export const STYLE_STATES = ["base", "complete", "invalid", "empty"] as const;
export type StyleState = (typeof STYLE_STATES)[number];

export type StyleDeclarations = { readonly [P in StyleProperty]?: string };
export type StyleRules = StyleDeclarations & { readonly [P in StylePseudo]?: StyleDeclarations };
export type Style = { readonly [S in StyleState]?: StyleRules };

const MAX_VALUE_LENGTH = 200;
const VALUE_CHARACTERS = /^[A-Za-z0-9#%.,()'" +\-/]*$/;
const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set(["rgb", "rgba", "hsl", "hsla", "calc"]);

/** A declared value: allowed characters only, and only colour and `calc` functions. */
export function isStyleValue(value: unknown): value is string {
  if (typeof value !== "string" || value.length > MAX_VALUE_LENGTH || !VALUE_CHARACTERS.test(value))
    return false;
  for (const match of value.matchAll(/([A-Za-z-]*)\s*\(/g)) {
    if (!ALLOWED_FUNCTIONS.has(match[1]!.toLowerCase())) return false;
  }
  return true;
}

const declarationShape = Object.fromEntries(
  Object.keys(STYLE_PROPERTIES).map((property) => [property, isStyleValue]),
) as Record<StyleProperty, Check<string>>;
const isDeclarations = object({}, declarationShape);
const isRules = object(
  {},
  {
    ...declarationShape,
    ...(Object.fromEntries(STYLE_PSEUDOS.map((pseudo) => [pseudo, isDeclarations])) as Record<
      StylePseudo,
      typeof isDeclarations
    >),
  },
);

export const isStyle: Check<Style> = object(
  {},
  Object.fromEntries(STYLE_STATES.map((state) => [state, isRules])) as Record<StyleState, typeof isRules>,
);
