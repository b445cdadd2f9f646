import { Type, type Static, type TSchema, type TSchemaOptions } from "typebox";

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

/**
 * A body field that may also be null, which means what leaving it out means (wire-format §1: Nulls). Written as
 * `type: [..., "null"]` rather than `anyOf`, so a wrong value gets one message ("must be at most 100"), not one
 * per alternative. `options` is a description, or further keywords.
 */
export function OrNull<T extends TSchema>(schema: T, options: string | TSchemaOptions = {}) {
  const { type } = schema as { type?: string | string[] };
  if (type === undefined) throw new Error("OrNull needs a schema with a type");
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    type: [...(Array.isArray(type) ? type : [type]), "null"],
    ...(typeof options === "string" ? { description: options } : options),
  });
}
