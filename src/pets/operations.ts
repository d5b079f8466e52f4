// The pet operations as the API answers them: from a parsed request (its data version and deadline
// set by src/http/root-hooks.ts) to its outcome, the status, own headers and JSON body. Errors are
// thrown as ApiError (or a store's error), for the caller to answer (replies.ts).
import type { FastifyRequest } from 'fastify'
import { authenticatedKey } from '../auth/authenticate.js'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Outcome } from '../http/replies.js'
import { compileSerializer } from '../http/serialization.js'
import type { NewPet, Pet as PetRecord } from '../storage/store.js'
import { type DeprecatedCallCounter, GETPET_SUNSET, getPetSunset } from './deprecation.js'
import type { ReadCache } from './read-cache.js'
import { type ListPetsQueryType, Pet, Pets } from './schemas.js'
import type { PetService } from './service.js'

export interface PetOperationsOptions {
  service: PetService
  clock: Clock
  deprecatedCalls: DeprecatedCallCounter
  /** Origin of next-page links when the request names no host. */
  fallbackOrigin: string
  /** List pages and pets as sent, kept while the data version holds. */
  pages: ReadCache
  pets: ReadCache
}

export class PetOperations {
  private readonly petJson = compileSerializer<PetRecord>(Pet)
  private readonly petsJson = compileSerializer<PetRecord[]>(Pets)

  constructor(private readonly o: PetOperationsOptions) {}

  /** A page of pets, and the `Link` to the next page when there is one. */
  async list(query: ListPetsQueryType, request: FastifyRequest): Promise<Outcome> {
    // Absent and empty parameters differ: `cursor=` is an error, not the first page.
    const key = JSON.stringify([query.limit, query.status ?? null, query.cursor ?? null])
    const version = request.dataVersion?.pets
    const { body, nextCursor } = await this.o.pages.get(key, version, async () => {
      const found = await this.o.service.listPage(query, request.deadline)
      return { body: this.petsJson(found.pets), nextCursor: found.nextCursor }
    })
    if (nextCursor === null) return { status: 200, headers: [], body }
    // The protocol and host are already validated (edge.ts, forwarded.ts); every query part is
    // URL-safe as it stands.
    const { protocol, host } = request
    const origin = host === '' ? this.o.fallbackOrigin : `${protocol}://${host}`
    const status = query.status ? `&status=${query.status}` : ''
    const next = `${origin}/v1/pets?limit=${query.limit}${status}&cursor=${nextCursor}`
    return { status: 200, headers: ['link', `<${next}>; rel="next"`], body }
  }

  /** A call of the deprecated getPet, whatever its id: counted per key until the sunset, refused
   * with 410 after it. Decided once the key is known and before the id is read. */
  getPetCalled(request: FastifyRequest): void {
    if (this.o.clock.nowMs() >= GETPET_SUNSET.getTime()) {
      throw new ApiError('gone', `getPet was removed on ${getPetSunset.isoDay}; use GET /v1/pets`)
    }
    this.o.deprecatedCalls.record(request.log, 'getPet', authenticatedKey(request))
  }

  /** A pet by id, once getPetCalled has let the call through. */
  async get(petId: bigint, request: FastifyRequest): Promise<Outcome> {
    const { body } = await this.o.pets.get(String(petId), request.dataVersion?.pets, async () => ({
      body: this.petJson(await this.o.service.get(petId, request.deadline)),
      nextCursor: null,
    }))
    return { status: 200, headers: [], body }
  }

  /** A create with an Idempotency-Key claims it first, and a retry replays the first answer. */
  async create(pet: NewPet, request: FastifyRequest, idempotencyKey?: string): Promise<Outcome> {
    const { id } = authenticatedKey(request)
    const result = await this.o.service.create(pet, id, idempotencyKey, request.deadline)
    const headers = ['location', `/v1/pets/${result.pet.id}`]
    if (result.replayed) headers.push('idempotent-replayed', 'true')
    return { status: 201, headers, body: this.petJson(result.pet) }
  }
}
