// The three operations of the interface, plus the order path it refers to without defining.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { authenticatedKey } from '../auth/authenticate.js'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { NewPet as NewPetRecord } from '../storage/store.js'
import { type DeprecatedCallCounter, getPetSunset, isSunset } from './deprecation.js'
import { nextPageLink } from './next-link.js'
import { ReadCache } from './read-cache.js'
import { errorResponse, headers, operationResponses, withHeaders } from './responses.js'
import { ListPetsQuery, NewPet, Pet, PetIdParams, Pets } from './schemas.js'
import { newPetOf, type PetService } from './service.js'

export interface PetRoutesOptions {
  service: PetService
  clock: Clock
  deprecatedCalls: DeprecatedCallCounter
  /** Origin used in next-page links when the request's Host cannot be trusted to form a URL. */
  fallbackOrigin: string
  /** List pages and pets as sent, shared with the hot path (src/pets/hot-path.ts). */
  pages: ReadCache
  pets: ReadCache
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** A body already serialized: a string with a JSON content type is sent as it is. */
function sendSerialized(reply: FastifyReply, body: string): FastifyReply {
  return reply.type(JSON_CONTENT_TYPE).send(body)
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

export async function petRoutes(app: FastifyInstance, opts: PetRoutesOptions): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const { service, clock, deprecatedCalls, pages, pets } = opts

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
    async (request, reply) => {
      const query = request.query as {
        limit: number
        status?: NewPetRecord['status']
        cursor?: string
      }
      const key = ReadCache.pageKey(query.limit, query.status, query.cursor)
      const page = await pages.through(key, request.dataVersion?.pets, async () => {
        const found = await service.listPage(query)
        // The route's own 200 serializer, so a cached page is byte for byte a fresh one.
        return { body: reply.serialize(found.pets) as string, nextCursor: found.nextCursor }
      })
      if (page.nextCursor !== null) {
        const { protocol, host } = request
        reply.header(
          'link',
          nextPageLink(protocol, host, opts.fallbackOrigin, query, page.nextCursor),
        )
      }
      return sendSerialized(reply, page.body)
    },
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
      const result = await service.create(
        newPetOf(request.body),
        authenticatedKey(request).id,
        idempotencyKey,
      )
      reply.code(201).header('location', `/v1/pets/${result.pet.id}`)
      if (result.replayed) reply.header('idempotent-replayed', 'true')
      return result.pet
    },
  )

  r.get(
    '/v1/pets/:petId',
    {
      config: { operation: 'getPet', deprecated: true },
      // Runs after authentication: the sunset answer, and the count of who still calls.
      onRequest: async (request) => {
        if (isSunset(clock.nowMs())) {
          throw new ApiError(
            'gone',
            `getPet was removed on ${getPetSunset.isoDay}; use GET /v1/pets`,
          )
        }
        deprecatedCalls.record(request.log, 'getPet', authenticatedKey(request))
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
    async (request, reply) => {
      const { petId } = request.params
      const pet = await pets.through(
        ReadCache.petKey(petId),
        request.dataVersion?.pets,
        async () => ({
          body: reply.serialize(await service.get(petId)) as string,
          nextCursor: null,
        }),
      )
      return sendSerialized(reply, pet.body)
    },
  )

  app.get(
    '/v1/store/orders',
    { config: { operation: 'listOrders' }, schema: { hide: true } },
    async () => {
      throw new ApiError('not_implemented', 'store orders are not implemented by this service')
    },
  )
}
