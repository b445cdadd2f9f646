import { Type, type TSchema } from "typebox";

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.Optional(Type.String()),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
  },
  { description: "RFC 9457 problem details; `errors` maps a field to its messages." },
);

/** Adds the problem+json responses every route can give to a route's success responses (for OpenAPI). */
export function responses<T extends Record<number, TSchema>>(success: T) {
  return { ...success, "4xx": ProblemSchema, "5xx": ProblemSchema };
}
