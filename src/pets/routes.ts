// The pet operations' routes: each declares its schema (validation and the OpenAPI document) and
// hands the parsed request to its operation (operations.ts). The caller's data version and
// deadline come from the root onRequest hook (src/http/root-hooks.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { authenticatedKey } from '../auth/authenticate.js'
import { sendOutcome } from '../http/error-handling.js'
import type { Caller, PetOperations } from './operations.js'
import { createPetSchema, getPetSchema, listOrdersSchema, listPetsSchema } from './route-schemas.js'
import type { ListPetsQueryType } from './schemas.js'
import { newPetOf } from './service.js'

/** The caller of an admitted request. */
function callerOf(request: FastifyRequest): Caller {
  return {
    version: request.dataVersion,
    deadline: request.deadline,
    key: authenticatedKey(request),
    log: request.log,
    protocol: request.protocol,
    host: request.host,
  }
}

export async function petRoutes(app: FastifyInstance, ops: PetOperations): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get(
    '/v1/pets',
    {
      config: { operation: 'listPets' },
      schema: listPetsSchema,
    },
    async (request, reply) =>
      sendOutcome(reply, await ops.list(request.query as ListPetsQueryType, callerOf(request))),
  )

  r.post(
    '/v1/pets',
    {
      config: { operation: 'createPet' },
      schema: createPetSchema,
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
      schema: getPetSchema,
    },
    async (request, reply) =>
      sendOutcome(reply, await ops.get(request.params.petId, callerOf(request))),
  )

  app.get(
    '/v1/store/orders',
    { config: { operation: 'listOrders' }, schema: listOrdersSchema },
    async () => ops.listOrders(),
  )
}
