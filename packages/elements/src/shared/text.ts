/**
 * The `text` field's mask and validation. A mask is a pattern string: `9` a digit, `a` a letter, `*` a letter or
 * digit, `\` makes the next character literal, anything else is shown as it is (`999-99-9999` for an SSN).
 */

export const MAX_MASK_LENGTH = 64;
export const MAX_TEXT_LENGTH = 256;

export type Slot =
  { readonly kind: "input"; readonly accepts: RegExp } | { readonly kind: "literal"; readonly char: string };

const SLOTS: Readonly<Record<string, RegExp>> = { "9": /\d/, a: /[A-Za-z]/, "*": /[A-Za-z0-9]/ };

/** The slots of a mask, or undefined when it is not one (empty, too long, a trailing `\`, no input slot). */
export function parseMask(mask: string): readonly Slot[] | undefined {
  if (mask.length === 0 || mask.length > MAX_MASK_LENGTH) return undefined;
  const slots: Slot[] = [];
  for (let index = 0; index < mask.length; index++) {
    const char = mask[index]!;
    if (char === "\\") {
      const next = mask[++index];
      if (next === undefined) return undefined;
      slots.push({ kind: "literal", char: next });
      continue;
    }
    const accepts = SLOTS[char];
    slots.push(accepts === undefined ? { kind: "literal", char } : { kind: "input", accepts });
  }
  return slots.some((slot) => slot.kind === "input") ? slots : undefined;
}

export interface TextState {
  readonly value: string;
  readonly complete: boolean;
  readonly valid: boolean;
}

/**
 * Applies a mask to what was typed: a character that fits the next input slot fills it (the literals before that
 * slot are written with it), a literal typed where the mask has it is kept, anything else is dropped. Complete
 * when every input slot is filled; the mask's trailing literals are then written too.
 */
export function maskText(input: string, slots: readonly Slot[]): { value: string; complete: boolean } {
  let value = "";
  let next = 0;
  for (const char of input) {
    const slot = slots[next];
    if (slot === undefined) break;
    if (slot.kind === "literal" && slot.char === char) {
      value += char;
      next++;
      continue;
    }
    let literals = "";
    let target = next;
    for (let s = slots[target]; s !== undefined && s.kind === "literal"; s = slots[++target])
      literals += s.char;
    const fits = slots[target];
    if (fits === undefined || fits.kind !== "input" || !fits.accepts.test(char)) continue;
    value += literals + char;
    next = target + 1;
  }
  const rest = slots.slice(next);
  const complete = rest.every((slot) => slot.kind === "literal");
  if (complete) for (const slot of rest) if (slot.kind === "literal") value += slot.char;
  return { value, complete };
}

/** A text field's state: masked when it has a mask, checked against its validation when it has one. */
export function textState(
  input: string,
  options: { readonly mask?: readonly Slot[]; readonly validation?: RegExp; readonly maxLength?: number },
): TextState {
  const limit = Math.min(options.maxLength ?? MAX_TEXT_LENGTH, MAX_TEXT_LENGTH);
  const masked = options.mask === undefined ? undefined : maskText(input, options.mask);
  const value = masked?.value ?? input.slice(0, limit);
  const matches = options.validation === undefined || value.length === 0 || options.validation.test(value);
  const filled = masked?.complete ?? value.length > 0;
  return { value, complete: filled && matches, valid: matches };
}

/** A validation pattern rebuilt in the frame: only the flags that keep `test` stateless. */
export function validationPattern(source: string, flags: string): RegExp | undefined {
  if (!/^[imsu]*$/.test(flags) || source.length > 512) return undefined;
  try {
    return new RegExp(source, flags);
  } catch {
    return undefined;
  }
}
