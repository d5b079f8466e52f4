// The Fastify door of the pet operations: each route declares its schema (validation and the
// OpenAPI document) and hands the parsed request to the operation core (operations.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { authenticatedKey } from '../auth/authenticate.js'
import type { Outcome } from '../http/envelope.js'
import { sendOutcome } from '../http/error-handling.js'
import { getPetSunset } from './deprecation.js'
import type { Caller, PetOperations } from './operations.js'
import { errorResponse, headers, operationResponses, withHeaders } from './responses.js'
import { ListPetsQuery, type ListPetsQueryType, NewPet, Pet, PetIdParams, Pets } from './schemas.js'
import { newPetOf } from './service.js'

/** Sends the outcome now, or once decided: a handler with nothing to wait for returns nothing. */
function answer(reply: FastifyReply, outcome: Outcome | Promise<Outcome>) {
  if (!(outcome instanceof Promise)) {
    sendOutcome(reply, outcome)
    return undefined
  }
  return outcome.then((o) => sendOutcome(reply, o))
}

/** The caller of an admitted request. */
function callerOf(request: FastifyRequest): Caller {
  return {
    version: request.dataVersion,
    key: authenticatedKey(request),
    log: request.log,
    protocol: request.protocol,
    host: request.host,
  }
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
    }),
  ),
})

export async function petRoutes(app: FastifyInstance, ops: PetOperations): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get(
    '/v1/pets',
    {
      config: { operation: 'listPets' },
      schema: {
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
      },
    },
    (request, reply) =>
      answer(reply, ops.list(request.query as ListPetsQueryType, callerOf(request))),
  )

  r.post(
    '/v1/pets',
    {
      config: { operation: 'createPet' },
      schema: {
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
      },
    },
    async (request, reply) => {
      const idempotencyKey = request.headers['idempotency-key']
      const caller = callerOf(request)
      return sendOutcome(reply, await ops.create(newPetOf(request.body), caller, idempotencyKey))
    },
  )

  r.get(
    '/v1/pets/:petId',
    {
      config: { operation: 'getPet', deprecated: true },
      // Runs after authentication: the sunset answer, and the count of who still calls.
      onRequest: (request, _reply, done) => {
        try {
          ops.getPetCalled({ key: authenticatedKey(request), log: request.log })
          done()
        } catch (err) {
          done(err as Error)
        }
      },
      schema: {
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
      },
    },
    (request, reply) => answer(reply, ops.get(request.params.petId, callerOf(request))),
  )

  app.get(
    '/v1/store/orders',
    { config: { operation: 'listOrders' }, schema: { hide: true } },
    async () => ops.listOrders(),
  )
}
