// The pet operations' routes: each declares its schema (validation and the OpenAPI document) and
// hands the parsed request to its operation (operations.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import { sendOutcome } from '../http/error-handling.js'
import type { PetOperations } from './operations.js'
import { createPetSchema, getPetSchema, listOrdersSchema, listPetsSchema } from './route-schemas.js'
import type { ListPetsQueryType } from './schemas.js'

export async function petRoutes(app: FastifyInstance, ops: PetOperations): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get(
    '/v1/pets',
    { config: { operation: 'listPets' }, schema: listPetsSchema },
    async (request, reply) =>
      sendOutcome(reply, await ops.list(request.query as ListPetsQueryType, request)),
  )

  r.post(
    '/v1/pets',
    { config: { operation: 'createPet' }, schema: createPetSchema },
    // The schema refuses unknown fields: the body is the pet to store as it stands.
    async (request, reply) => {
      const idempotencyKey = request.headers['idempotency-key']
      return sendOutcome(reply, await ops.create(request.body, request, idempotencyKey))
    },
  )

  r.get(
    '/v1/pets/:petId',
    {
      config: { operation: 'getPet', deprecated: true },
      // Runs after authentication: the sunset answer, and the count of who still calls.
      onRequest: async (request) => ops.getPetCalled(request),
      schema: getPetSchema,
    },
    async (request, reply) => sendOutcome(reply, await ops.get(request.params.petId, request)),
  )

  app.get(
    '/v1/store/orders',
    { config: { operation: 'listOrders' }, schema: listOrdersSchema },
    async () => {
      throw new ApiError('not_implemented', 'store orders are not implemented by this service')
    },
  )
}
