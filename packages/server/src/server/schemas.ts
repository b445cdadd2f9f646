import { Type } from "typebox";

export const Uuid = Type.String({ format: "uuid" });
export const Timestamp = Type.String({ format: "date-time" });

/** A JSON Schema pattern; the validation messages name it in words. */
export const NO_CONTROL_CHARACTERS = "^[^\\u0000-\\u001f]*$";

/**
 * A string enum as one `enum` keyword. TypeBox unions of literals become `anyOf`, whose validation errors
 * are one line per alternative; a single `enum` gives clients one clear message.
 */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: { description?: string } = {},
) {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });
}
