import {
  STYLE_PROPERTIES,
  STYLE_PSEUDOS,
  STYLE_STATES,
  type Style,
  type StyleDeclarations,
  type StyleProperty,
  type StyleState,
} from "../shared/style.js";

/** The state classes the field carries, which the page's per-state styles select. */
const STATE_SELECTORS: Record<StyleState, string> = {
  base: "#field",
  complete: "#field.is-complete",
  invalid: "#field.is-invalid",
  empty: "#field.is-empty",
};

/**
 * Writes a style into a sheet of its own. Selectors are ours; each value goes through `setProperty`, which parses
 * it as a value of that one property and drops it if it is not one, so no value can open a rule or a selector.
 * CSSOM edits are not inline styles, which the frame's CSP (`style-src 'self'`) forbids.
 */
export function applyStyle(sheet: CSSStyleSheet, style: Style): void {
  while (sheet.cssRules.length > 0) sheet.deleteRule(0);
  for (const state of STYLE_STATES) {
    const rules = style[state];
    if (rules === undefined) continue;
    declare(sheet, STATE_SELECTORS[state], rules);
    for (const pseudo of STYLE_PSEUDOS) {
      const nested = rules[pseudo];
      if (nested !== undefined) declare(sheet, STATE_SELECTORS[state] + pseudo, nested);
    }
  }
}

function declare(sheet: CSSStyleSheet, selector: string, declarations: StyleDeclarations): void {
  const index = sheet.insertRule(`${selector} {}`, sheet.cssRules.length);
  const rule = sheet.cssRules[index];
  if (!(rule instanceof CSSStyleRule)) return;
  for (const property of Object.keys(STYLE_PROPERTIES) as StyleProperty[]) {
    const value = declarations[property];
    if (value !== undefined) rule.style.setProperty(STYLE_PROPERTIES[property], value);
  }
}
