import { Type, type Static } from "typebox";
import { ApplicationSchema } from "../applications/schemas.js";
import { PageOf, PageParams } from "../server/pagination.js";
import { Timestamp, Uuid } from "../server/schemas.js";

/** wire-format §7: Basis Theory's own limit on reactor code. */
export const MAX_CODE_LENGTH = 50_000;
export const MAX_CONFIGURATION_ENTRIES = 100;
const MAX_CONFIGURATION_VALUE_LENGTH = 10_000;
// TypeBox drops a Record's key schema from the JSON Schema it emits, so key lengths are set with propertyNames.
const CONFIGURATION_KEY = { minLength: 1, maxLength: 200 };

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Code = Type.String({
  minLength: 1,
  maxLength: MAX_CODE_LENGTH,
  description:
    "JavaScript (CommonJS) exporting an async function of `{ args, configuration, svc }`; compiled on every " +
    "write, and requiring only allowed modules.",
});

function nullable<T>(schema: Record<string, unknown>, description: string) {
  return Type.Unsafe<T | null>({ ...schema, type: ["object", "null"], description });
}

const CONFIGURATION_DESCRIPTION =
  `Names to string values, available to the code as \`configuration\`; at most ${MAX_CONFIGURATION_ENTRIES} ` +
  `entries, names of 1–200 characters, values of at most ${MAX_CONFIGURATION_VALUE_LENGTH} characters. ` +
  "Encrypted at rest.";

/**
 * Required, and an object (spec §4.3): a full replacement without it would erase a reactor's configuration
 * silently. `{}` is none.
 */
const Configuration = Type.Unsafe<Record<string, string>>({
  type: "object",
  additionalProperties: { type: "string", maxLength: MAX_CONFIGURATION_VALUE_LENGTH },
  maxProperties: MAX_CONFIGURATION_ENTRIES,
  propertyNames: CONFIGURATION_KEY,
  description: `${CONFIGURATION_DESCRIPTION} Required; \`{}\` for none.`,
});

/** Basis Theory SDKs may send a whole Application here; only its id is read. */
const APPLICATION_REFERENCE = {
  properties: { id: Uuid },
  required: ["id"],
};
const ApplicationReference = nullable<{ id: string }>(
  APPLICATION_REFERENCE,
  "The public or private Application of this tenant that `svc` acts as; other members are ignored. " +
    "Absent or null for none.",
);

// Unknown fields are refused: a misspelt member would otherwise be silently ignored.
const reactorBody = {
  name: Name,
  code: Code,
  configuration: Configuration,
  application: Type.Optional(ApplicationReference),
};

export const CreateReactorBody = Type.Object(reactorBody, { additionalProperties: false });
export type CreateReactorBody = Static<typeof CreateReactorBody>;

export const UpdateReactorBody = Type.Object(reactorBody, {
  additionalProperties: false,
  description:
    "A full replacement: configuration is required (`{}` for none), an absent application is removed.",
});

/** RFC 7386: absent members stay; a null in `configuration` removes that name, `application: null` the link. */
export const PatchReactorBody = Type.Object(
  {
    name: Type.Optional(Name),
    code: Type.Optional(Code),
    configuration: Type.Optional(
      nullable<Record<string, string | null>>(
        {
          additionalProperties: { type: ["string", "null"], maxLength: MAX_CONFIGURATION_VALUE_LENGTH },
          // Room to remove every name and set as many new ones; the result is held to the usual limit.
          maxProperties: 2 * MAX_CONFIGURATION_ENTRIES,
          propertyNames: CONFIGURATION_KEY,
        },
        "Merged name by name; a null value removes that name, and null for the whole map empties it.",
      ),
    ),
    application: Type.Optional(
      nullable<{ id: string }>(APPLICATION_REFERENCE, "Sets the Application; null removes it."),
    ),
  },
  { additionalProperties: false },
);
export type PatchReactorBody = Static<typeof PatchReactorBody>;

const reactorFields = {
  id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  code: Type.String(),
  configuration: Type.Record(Type.String(), Type.String()),
  application_id: Type.Optional(
    Type.String({
      format: "uuid",
      description:
        "The reactor's Application, if it has one. Not in Basis Theory's model, where only create shows it.",
    }),
  ),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
};

export const ReactorSchema = Type.Object(reactorFields);

/** Only the create response carries the Application itself (spec §2.5), without its key. */
export const CreatedReactorSchema = Type.Object({
  ...reactorFields,
  application: Type.Optional(ApplicationSchema),
});

export const ReactorIdParams = Type.Object({ id: Uuid });

export const ListReactorsQuery = Type.Object({
  id: Type.Optional(Type.Array(Uuid, { maxItems: 100, description: "Repeat to filter by several ids." })),
  name: Type.Optional(
    Type.String({
      maxLength: 400,
      description:
        "Case-insensitive. Without `*`, names containing this text; with `*`, names matching it as a whole, " +
        "each `*` standing for any run of characters (`pay*`, `*-eu`, `stripe*refund`).",
    }),
  ),
  ...PageParams,
});

export const ReactorPage = PageOf(ReactorSchema);
