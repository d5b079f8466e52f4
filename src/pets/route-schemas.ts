// The pet operations' schemas: validation of each request part, and the OpenAPI document.
import { Type } from '@sinclair/typebox'
import { getPetSunset } from './deprecation.js'
import { errorResponse, headers, operationResponses, withHeaders } from './responses.js'
import { ListPetsQuery, NewPet, Pet, PetIdParams, Pets } from './schemas.js'

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
  response: operationResponses({
    200: withHeaders(Pets, 'A page of animals.', { Link: headers.link }),
    400: errorResponse('`limit`, `status` or `cursor` is invalid.'),
    401: errorResponse('API key missing or invalid.', headers.challenge),
    429: errorResponse('Rate limit exceeded.', headers.retryAfter),
  }),
}

export const createPetSchema = {
  operationId: 'createPet',
  summary: 'Add an animal',
  description:
    'Adds an animal. A 201 means the animal is stored durably. Send `Idempotency-Key` to make retries safe.',
  tags: ['animals'],
  headers: IdempotencyHeaders,
  body: NewPet,
  response: operationResponses({
    201: withHeaders(Pet, 'Animal added.', {
      Location: headers.location,
      'Idempotent-Replayed': headers.replayed,
    }),
    400: errorResponse('Body missing, required fields absent, or values invalid.'),
    401: errorResponse('API key missing or invalid.', headers.challenge),
    409: errorResponse(
      'A request with this Idempotency-Key is still in progress.',
      headers.retryAfter,
    ),
    413: errorResponse('Request body larger than 64 KiB.'),
    415: errorResponse('Request body is not application/json.'),
    422: errorResponse('Idempotency-Key reused with a different body.'),
    429: errorResponse('Rate limit exceeded.', headers.retryAfter),
  }),
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
      200: withHeaders(Pet, 'Animal found.', {}),
      400: errorResponse('`petId` is not a 64-bit integer.'),
      401: errorResponse('API key missing or invalid.', headers.challenge),
      404: errorResponse('No animal with that identifier.'),
      410: errorResponse('The operation is past its sunset.'),
      429: errorResponse('Rate limit exceeded.', headers.retryAfter),
    },
    headers.deprecation,
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
  response: operationResponses({
    // No parameter or body is read; only a malformed request (e.g. its Host header) is refused.
    400: errorResponse('The request is malformed, e.g. its `Host` header names no host.'),
    401: errorResponse('API key missing or invalid.', headers.challenge),
    429: errorResponse('Rate limit exceeded.', headers.retryAfter),
    501: errorResponse('Store orders are not implemented by this service.'),
  }),
}
