// The API's payloads, defined once: these schemas validate requests, shape responses, give the
// TypeScript types, and are the components of the OpenAPI document.
import { type SchemaOptions, type Static, type TSchema, Type } from '@sinclair/typebox'
import { type ErrorCode, errorCodes } from '../errors.js'
import { type PetStatus as PetStatusValue, petStatuses } from '../storage/store.js'
import { CURSOR_MALFORMED, CURSOR_PATTERN, encodeCursor, MAX_CURSOR_LENGTH } from './cursor.js'

/** A JSON integer in the int64 range, carried as BigInt so no digit is lost; so are the bounds,
 * which the validator compares exactly and the document writes with every digit. */
const Int64 = (options: SchemaOptions) =>
  Type.Unsafe<bigint>({
    type: 'integer',
    format: 'int64',
    minimum: -(2n ** 63n),
    maximum: 2n ** 63n - 1n,
    ...options,
  })

/** The most animals one page holds: the largest `limit`. */
const MAX_PAGE_SIZE = 100

/** The Pet example, its fields its schema's examples: within 2^53 for tools that read with
 * JSON.parse, the id the first a store assigns so that the examples work on an empty store. */
export const EXAMPLE_PET = { id: 1n, name: 'Rex', categoryId: 12n, status: 'available' } as const

export const PetStatus = Type.Unsafe<PetStatusValue>({
  type: 'string',
  enum: [...petStatuses],
  title: 'PetStatus',
  description: 'Availability of the animal.',
  example: EXAMPLE_PET.status,
})

/** At least one character that is not Unicode White_Space, written out for generated clients that
 * compile patterns without the `u` flag `\p{White_Space}` needs. All of it is in the BMP, so it
 * matches alike with and without the flag. */
export const NOT_ONLY_WHITE_SPACE =
  '[^\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]'
/** PostgreSQL text cannot hold U+0000; refusing it on every store keeps them alike. */
export const WITHOUT_U0000 = '^[^\\u0000]*$'

const NAME_MAX = 255
/** Two string schemas under `allOf`, each with its own pattern and message, checked in order;
 * generators that read `allOf` of strings (orval's zod: `.and(...)`) keep both rules. */
const petName = Type.Unsafe<string>({
  description: `The animal's name: 1 to ${NAME_MAX} Unicode code points, not only white space, without U+0000.`,
  example: EXAMPLE_PET.name,
  allOf: [
    {
      type: 'string',
      minLength: 1,
      maxLength: NAME_MAX,
      pattern: NOT_ONLY_WHITE_SPACE,
      'x-pattern-message': 'must contain a character that is not white space',
    },
    {
      type: 'string',
      maxLength: NAME_MAX,
      pattern: WITHOUT_U0000,
      'x-pattern-message': 'must not contain the character U+0000',
    },
  ],
})

const newPetFields = {
  name: petName,
  categoryId: Int64({
    description: 'Identifier of the category the animal belongs to.',
    example: EXAMPLE_PET.categoryId,
  }),
  status: Type.Optional(PetStatus),
}

export const NewPet = Type.Object(newPetFields, { title: 'NewPet', additionalProperties: false })

export const Pet = Type.Object(
  {
    id: Int64({
      description: 'Unique identifier, assigned by the service on creation.',
      minimum: 1n,
      example: EXAMPLE_PET.id,
    }),
    ...newPetFields,
  },
  { title: 'Pet', additionalProperties: false },
)

export const Pets = Type.Array(Pet, { title: 'Pets', maxItems: MAX_PAGE_SIZE })

export const ErrorSchema = Type.Object(
  {
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: [...errorCodes],
      description: 'Machine-readable error code.',
      example: 'not_found',
    }),
    // A name the message repeats from the request is cut short.
    message: Type.String({
      maxLength: 1024,
      description: 'Human-readable description.',
      example: `no pet with id ${EXAMPLE_PET.id}`,
    }),
    status: Type.Integer({
      format: 'int32',
      minimum: 400,
      maximum: 599,
      description: 'The HTTP status code of the response.',
      example: 404,
    }),
  },
  { title: 'Error', additionalProperties: false },
)

/** The position before the first animal: a list with it starts at the first page. */
const START_CURSOR = encodeCursor(0n)

export const ListPetsQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      default: 20,
      description: 'Maximum number of animals returned.',
      examples: [50],
    }),
  ),
  // `examples` of a parameter's schema becomes the parameter's own `example` in the document.
  status: Type.Optional(
    Type.Unsafe<PetStatusValue>({ ...PetStatus, examples: [EXAMPLE_PET.status] }),
  ),
  cursor: Type.Optional(
    Type.String({
      maxLength: MAX_CURSOR_LENGTH,
      pattern: CURSOR_PATTERN,
      'x-pattern-message': CURSOR_MALFORMED,
      description: `Opaque position from the \`Link: rel="next"\` header of the previous page; leave it out for the first page. The example, \`${START_CURSOR}\`, is the position before the first animal: sent as it is, it gives the first page too.`,
      // Importers (openapi-to-postmanv2) send every optional parameter with its example, or a
      // value faked from its schema without one: the start position makes either harmless.
      examples: [START_CURSOR],
    }),
  ),
})
export type ListPetsQueryType = Static<typeof ListPetsQuery> & { limit: number }

export const PetIdParams = Type.Object({
  petId: Int64({ description: 'Identifier of the animal.', examples: [EXAMPLE_PET.id] }),
})

/** The named schemas that become `components.schemas` of the OpenAPI document. */
export const componentSchemas: Record<string, TSchema> = {
  Pet,
  NewPet,
  Pets,
  PetStatus,
  Error: ErrorSchema,
}
