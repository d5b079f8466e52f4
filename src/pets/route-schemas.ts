// The pet operations' schemas: validation of each request part, and the OpenAPI document, with
// the `links` of their responses (which call follows which, for clients and API tools).
import { Type } from '@sinclair/typebox'
import { AUTHORITY_RULE } from '../http/edge.js'
import { CURSOR_MALFORMED } from './cursor.js'
import { getPetSunset } from './deprecation.js'
import { errorResponse, headers, operationResponses, withHeaders } from './responses.js'
import { EXAMPLE_PET, ListPetsQuery, NewPet, Pet, PetIdParams, Pets } from './schemas.js'

const FIRST_PET = { summary: 'The first animal of the store', value: EXAMPLE_PET }

export const listPetsSchema = {
  operationId: 'listPets',
  summary: 'List all animals',
  description:
    'Returns animals in ascending id order. When more exist, the response carries `Link: <...>; rel="next"` with the full URL of the next page.',
  tags: ['animals'],
  querystring: ListPetsQuery,
  response: operationResponses(
    {
      200: withHeaders(
        Pets,
        'A page of animals.',
        { Link: headers.link },
        {
          page: { summary: 'A page holding the first animal', value: [EXAMPLE_PET] },
          empty: { summary: 'No animal matches', value: [] },
        },
      ),
      400: errorResponse(400, '`limit`, `status` or `cursor` is invalid.', {
        invalidLimit: [
          '`limit` out of range',
          "query parameter 'limit' must be an integer from 1 to 100",
        ],
        invalidCursor: [
          '`cursor` not one the service gave',
          `query parameter 'cursor' ${CURSOR_MALFORMED}`,
        ],
      }),
    },
    'GET, HEAD, POST',
  ),
  links: {
    200: {
      nextPage: {
        operationId: 'listPets',
        parameters: { limit: '$request.query.limit', status: '$request.query.status' },
        description:
          'The next page, when this one carries `Link: <…>; rel="next"`: the same `limit` and `status` with the `cursor` of that URL (a runtime expression cannot take a part of a header, so the cursor is not in `parameters`); or simply that URL. The last page has no `rel="next"`.',
      },
    },
  },
}

export const createPetSchema = {
  operationId: 'createPet',
  summary: 'Add an animal',
  description:
    'Adds an animal. A 201 means the animal is stored durably. Send `Idempotency-Key` to make retries safe.',
  tags: ['animals'],
  headers: Type.Object({
    'idempotency-key': Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: '^[\\x21-\\x7e]+$',
        'x-pattern-message': 'must be visible ASCII characters, without spaces',
        description:
          'Makes the request safe to retry: a retry with the same key and body within 24 hours returns the original pet instead of creating another.',
        examples: ['9b2f6c1e-4d7a-4f3b-8e5d-2a1c0b9f8e7d'],
      }),
    ),
  }),
  body: NewPet,
  response: operationResponses(
    {
      201: withHeaders(
        Pet,
        'Animal added.',
        { Location: headers.location, 'Idempotent-Replayed': headers.replayed },
        { created: FIRST_PET },
      ),
      400: errorResponse(400, 'Body missing, required fields absent, or values invalid.', {
        missingField: ['A required field is absent', "missing required field 'categoryId'"],
        emptyBody: ['No body', 'request body is empty'],
      }),
      409: errorResponse(
        409,
        'A request with this Idempotency-Key is still in progress.',
        {
          inProgress: [
            'The first request with this key is not answered yet',
            'a request with this Idempotency-Key is still in progress; retry later',
          ],
        },
        headers.retryAfter,
      ),
      413: errorResponse(413, 'Request body larger than 64 KiB.', {
        tooLarge: ['Body over 65536 bytes', 'request body is larger than 65536 bytes'],
      }),
      415: errorResponse(415, 'Request body is not application/json.', {
        notJson: ['Another content type', 'request body must be application/json'],
      }),
      422: errorResponse(422, 'Idempotency-Key reused with a different body.', {
        keyReused: [
          'Same key, different body',
          'Idempotency-Key was already used with a different request body',
        ],
      }),
    },
    'GET, HEAD, POST',
  ),
  links: {
    201: {
      getCreatedPet: {
        operationId: 'getPet',
        parameters: { petId: '$response.body#/id' },
        description:
          'The animal just added: `petId` is the `id` of the body, also the last segment of `Location`.',
      },
    },
  },
}

export const getPetSchema = {
  operationId: 'getPet',
  summary: 'Get an animal',
  description: `Deprecated: removed on ${getPetSunset.longDay}, after which it answers 410. Use \`GET /pets\` with the \`status\` filter instead.`,
  deprecated: true,
  tags: ['animals'],
  params: PetIdParams,
  response: operationResponses(
    {
      200: withHeaders(Pet, 'Animal found.', {}, { found: FIRST_PET }),
      400: errorResponse(400, '`petId` is not a 64-bit integer.', {
        invalidPetId: [
          '`petId` is not a 64-bit integer',
          "path parameter 'petId' must be a 64-bit integer",
        ],
      }),
      404: errorResponse(404, 'No animal with that identifier.', {
        noSuchPet: ['No animal with that id', `no pet with id ${EXAMPLE_PET.id}`],
      }),
      410: errorResponse(410, 'The operation is past its sunset.', {
        pastSunset: [
          'Called after the sunset',
          `getPet was removed on ${getPetSunset.isoDay}; use GET /v1/pets`,
        ],
      }),
    },
    'GET, HEAD',
    headers.deprecation,
  ),
}

/** Declared so that clients, mocks and the reference page know the orders operation and its only
 * answers. */
export const listOrdersSchema = {
  operationId: 'listOrders',
  summary: 'List store orders',
  description:
    'Referred to by the interface, which defines none of its parameters, payloads or behaviour: this service answers it 501 `not_implemented`.',
  tags: ['orders'],
  response: operationResponses(
    {
      400: errorResponse(400, 'The request is malformed, e.g. its `Host` header names no host.', {
        invalidHost: ['A `Host` that names no host', `the Host header ${AUTHORITY_RULE}`],
      }),
      501: errorResponse(501, 'Store orders are not implemented by this service.', {
        notImplemented: [
          'Any request with a valid key',
          'store orders are not implemented by this service',
        ],
      }),
    },
    'GET, HEAD',
  ),
}
