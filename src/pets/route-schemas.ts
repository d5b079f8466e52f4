// The pet operations' schemas: validation of each request part, and the OpenAPI document.
import { Type } from '@sinclair/typebox'
import { AUTHORITY_RULE } from '../http/edge.js'
import { CURSOR_MALFORMED } from './cursor.js'
import { getPetSunset } from './deprecation.js'
import { errorResponse, operationResponses, rateLimited, unauthorized } from './error-responses.js'
import { headers, withHeaders } from './responses.js'
import { EXAMPLE, ListPetsQuery, NewPet, Pet, PetIdParams, Pets } from './schemas.js'

/** The Pet example: what the first create of a store answers, and a get of it. */
const examplePet = {
  id: EXAMPLE.PET_ID,
  name: EXAMPLE.NAME,
  categoryId: EXAMPLE.CATEGORY_ID,
  status: EXAMPLE.STATUS,
}

const IdempotencyHeaders = Type.Object({
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
})

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
          page: { summary: 'A page holding the first animal', value: [examplePet] },
          empty: { summary: 'No animal matches', value: [] },
        },
      ),
      400: errorResponse('`limit`, `status` or `cursor` is invalid.', {
        invalidLimit: {
          summary: '`limit` out of range',
          code: 'invalid_request',
          message: "query parameter 'limit' must be an integer from 1 to 100",
        },
        invalidCursor: {
          summary: '`cursor` not one the service gave',
          code: 'invalid_request',
          message: `query parameter 'cursor' ${CURSOR_MALFORMED}`,
        },
      }),
      401: unauthorized,
      429: rateLimited,
    },
    { allow: 'GET, HEAD, POST' },
  ),
}

export const createPetSchema = {
  operationId: 'createPet',
  summary: 'Add an animal',
  description:
    'Adds an animal. A 201 means the animal is stored durably. Send `Idempotency-Key` to make retries safe.',
  tags: ['animals'],
  headers: IdempotencyHeaders,
  body: NewPet,
  response: operationResponses(
    {
      201: withHeaders(
        Pet,
        'Animal added.',
        { Location: headers.location, 'Idempotent-Replayed': headers.replayed },
        { created: { summary: 'The first animal of the store', value: examplePet } },
      ),
      400: errorResponse('Body missing, required fields absent, or values invalid.', {
        missingField: {
          summary: 'A required field is absent',
          code: 'invalid_request',
          message: "missing required field 'categoryId'",
        },
        emptyBody: {
          summary: 'No body',
          code: 'invalid_request',
          message: 'request body is empty',
        },
      }),
      401: unauthorized,
      409: errorResponse(
        'A request with this Idempotency-Key is still in progress.',
        {
          inProgress: {
            summary: 'The first request with this key is not answered yet',
            code: 'idempotency_key_in_progress',
            message: 'a request with this Idempotency-Key is still in progress; retry later',
          },
        },
        headers.retryAfter,
      ),
      413: errorResponse('Request body larger than 64 KiB.', {
        tooLarge: {
          summary: 'Body over 65536 bytes',
          code: 'payload_too_large',
          message: 'request body is larger than 65536 bytes',
        },
      }),
      415: errorResponse('Request body is not application/json.', {
        notJson: {
          summary: 'Another content type',
          code: 'unsupported_media_type',
          message: 'request body must be application/json',
        },
      }),
      422: errorResponse('Idempotency-Key reused with a different body.', {
        keyReused: {
          summary: 'Same key, different body',
          code: 'idempotency_key_reused',
          message: 'Idempotency-Key was already used with a different request body',
        },
      }),
      429: rateLimited,
    },
    { allow: 'GET, HEAD, POST' },
  ),
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
      200: withHeaders(
        Pet,
        'Animal found.',
        {},
        { found: { summary: 'The first animal of the store', value: examplePet } },
      ),
      400: errorResponse('`petId` is not a 64-bit integer.', {
        invalidPetId: {
          summary: '`petId` is not a 64-bit integer',
          code: 'invalid_request',
          message: "path parameter 'petId' must be a 64-bit integer",
        },
      }),
      401: unauthorized,
      404: errorResponse('No animal with that identifier.', {
        noSuchPet: {
          summary: 'No animal with that id',
          code: 'not_found',
          message: `no pet with id ${EXAMPLE.PET_ID}`,
        },
      }),
      410: errorResponse('The operation is past its sunset.', {
        pastSunset: {
          summary: 'Called after the sunset',
          code: 'gone',
          message: `getPet was removed on ${getPetSunset.isoDay}; use GET /v1/pets`,
        },
      }),
      429: rateLimited,
    },
    { headers: headers.deprecation, allow: 'GET, HEAD' },
  ),
}

/**
 * The orders operation the interface refers to without defining its parameters, payloads or
 * behaviour: declared so clients, mocks and the reference page know it and its only answers.
 */
export const listOrdersSchema = {
  operationId: 'listOrders',
  summary: 'List store orders',
  description:
    'Referred to by the interface, which defines none of its parameters, payloads or behaviour: this service answers it 501 `not_implemented`.',
  tags: ['orders'],
  response: operationResponses(
    {
      // No parameter or body is read; only a malformed request (e.g. its Host header) is refused.
      400: errorResponse('The request is malformed, e.g. its `Host` header names no host.', {
        invalidHost: {
          summary: 'A `Host` that names no host',
          code: 'invalid_request',
          message: `the Host header ${AUTHORITY_RULE}`,
        },
      }),
      401: unauthorized,
      429: rateLimited,
      501: errorResponse('Store orders are not implemented by this service.', {
        notImplemented: {
          summary: 'Any request with a valid key',
          code: 'not_implemented',
          message: 'store orders are not implemented by this service',
        },
      }),
    },
    { allow: 'GET, HEAD' },
  ),
}
