// The API's payloads, defined once: these schemas validate requests, shape responses, give the
// TypeScript types, and are the components of the OpenAPI document.
import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { type ErrorCode, errorCodes } from '../errors.js'
import { type PetStatus as PetStatusValue, petStatuses } from '../storage/store.js'
import { CURSOR_MALFORMED, CURSOR_PATTERN, MAX_CURSOR_LENGTH } from './cursor.js'

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/**
 * A JSON integer in the int64 range; carried as BigInt in the service so no digit is lost. The
 * bounds are BigInts too: the validator compares them exactly and the document is written with
 * every digit (src/http/openapi.ts).
 */
export const Int64 = (options: { description?: string; minimum?: bigint } = {}) =>
  Type.Unsafe<bigint>({
    type: 'integer',
    format: 'int64',
    minimum: INT64_MIN,
    maximum: INT64_MAX,
    ...options,
  })

/** The most animals one page holds: the largest `limit`. */
export const MAX_PAGE_SIZE = 100
/** The longest `message` of an Error body; a name it repeats from the request is cut short. */
export const MAX_ERROR_MESSAGE_LENGTH = 1024

export const PetStatus = Type.Unsafe<PetStatusValue>({
  type: 'string',
  enum: [...petStatuses],
  title: 'PetStatus',
  description: 'Availability of the animal.',
})

const petName = Type.String({
  minLength: 1,
  maxLength: 255,
  // At least one character that is not Unicode White_Space.
  pattern: '[^\\p{White_Space}]',
  'x-pattern-message': 'must contain a character that is not white space',
  description:
    "The animal's name: 1 to 255 Unicode code points, not only white space, without U+0000.",
})

export const NewPet = Type.Object(
  {
    name: petName,
    categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
    status: Type.Optional(PetStatus),
  },
  { title: 'NewPet', additionalProperties: false },
)
export type NewPetBody = Static<typeof NewPet>

export const Pet = Type.Object(
  {
    id: Int64({
      description: 'Unique identifier, assigned by the service on creation.',
      minimum: 1n,
    }),
    name: petName,
    categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
    status: Type.Optional(PetStatus),
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
    }),
    message: Type.String({
      maxLength: MAX_ERROR_MESSAGE_LENGTH,
      description: 'Human-readable description.',
    }),
    status: Type.Integer({
      format: 'int32',
      minimum: 400,
      maximum: 599,
      description: 'The HTTP status code of the response.',
    }),
  },
  { title: 'Error', additionalProperties: false },
)

export const ListPetsQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      default: 20,
      description: 'Maximum number of animals returned.',
    }),
  ),
  status: Type.Optional(PetStatus),
  cursor: Type.Optional(
    Type.String({
      maxLength: MAX_CURSOR_LENGTH,
      pattern: CURSOR_PATTERN,
      'x-pattern-message': CURSOR_MALFORMED,
      description: 'Opaque position from the `Link: rel="next"` header of the previous page.',
    }),
  ),
})
export type ListPetsQueryType = { limit: number; status?: PetStatusValue; cursor?: string }

export const PetIdParams = Type.Object({
  petId: Int64({ description: 'Identifier of the animal.' }),
})

/** The named schemas that become `components.schemas` of the OpenAPI document. */
export const componentSchemas: Record<string, TSchema> = {
  Pet,
  NewPet,
  Pets,
  PetStatus,
  Error: ErrorSchema,
}
