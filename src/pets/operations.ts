// The pet operations as the API answers them: from a parsed request to its outcome (status, the
// operation's own headers, the body's JSON text).
// Errors are thrown as ApiError (or a store's error), for the caller to answer (replies.ts).
import type { AuthenticatedKey } from '../auth/api-keys.js'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Outcome } from '../http/replies.js'
import { compileSerializer } from '../http/serialization.js'
import type { DataVersion, Deadline, NewPet, Pet as PetRecord } from '../storage/store.js'
import { type DeprecatedCallCounter, getPetSunset, isSunset, type WarnLog } from './deprecation.js'
import { nextPageLink } from './next-link.js'
import { ReadCache } from './read-cache.js'
import { type ListPetsQueryType, Pet, Pets } from './schemas.js'
import type { PetService } from './service.js'

/** What an operation needs of the request besides its parameters. */
export interface Caller {
  /** The store's data version read after the request arrived: caches hold only at it. */
  version: DataVersion | undefined
  /** By when the database must have answered (src/storage/deadline.ts). */
  deadline: Deadline
  key: AuthenticatedKey
  /** The request's logger (the deprecation count warns through it). */
  log: WarnLog
  /** The request's protocol and host (src/http/forwarded.ts), for the next page's URL. */
  protocol: string
  host: string
}

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
  private readonly petJson: (pet: PetRecord) => string
  private readonly petsJson: (pets: PetRecord[]) => string

  constructor(private readonly o: PetOperationsOptions) {
    this.petJson = compileSerializer<PetRecord>(Pet)
    this.petsJson = compileSerializer<PetRecord[]>(Pets)
  }

  /** A page of pets: from the page cache while the data version holds, else from the store. */
  async list(query: ListPetsQueryType, caller: Caller): Promise<Outcome> {
    const version = caller.version?.pets
    const key = ReadCache.pageKey(query.limit, query.status, query.cursor)
    const cached = this.o.pages.get(key, version)
    if (cached !== undefined) return this.page(query, caller, cached.body, cached.nextCursor)
    const found = await this.o.service.listPage(query, caller.deadline)
    const body = this.petsJson(found.pets)
    this.o.pages.set(key, version, { body, nextCursor: found.nextCursor })
    return this.page(query, caller, body, found.nextCursor)
  }

  private page(
    query: ListPetsQueryType,
    caller: Caller,
    body: string,
    nextCursor: string | null,
  ): Outcome {
    const headers =
      nextCursor === null
        ? []
        : [
            'link',
            nextPageLink(caller.protocol, caller.host, this.o.fallbackOrigin, query, nextCursor),
          ]
    return { status: 200, headers, body }
  }

  /**
   * A call of the deprecated getPet, whatever its id: counted per key until the sunset, refused
   * with 410 after it. Decided once the key is known and before the id is read.
   */
  getPetCalled(caller: Pick<Caller, 'key' | 'log'>): void {
    if (isSunset(this.o.clock.nowMs())) {
      throw new ApiError('gone', `getPet was removed on ${getPetSunset.isoDay}; use GET /v1/pets`)
    }
    this.o.deprecatedCalls.record(caller.log, 'getPet', caller.key)
  }

  /** A pet by id, once getPetCalled has let the call through: from the pet cache, else the store. */
  async get(petId: bigint, caller: Caller): Promise<Outcome> {
    const version = caller.version?.pets
    const key = ReadCache.petKey(petId)
    const cached = this.o.pets.get(key, version)
    if (cached !== undefined) return { status: 200, headers: [], body: cached.body }
    const body = this.petJson(await this.o.service.get(petId, caller.deadline))
    this.o.pets.set(key, version, { body, nextCursor: null })
    return { status: 200, headers: [], body }
  }

  /** A create with an Idempotency-Key claims it first, and a retry replays the first answer. */
  async create(pet: NewPet, caller: Caller, idempotencyKey?: string): Promise<Outcome> {
    const result = await this.o.service.create(pet, caller.key.id, idempotencyKey, caller.deadline)
    const outcome = this.created(result.pet)
    if (result.replayed) outcome.headers.push('idempotent-replayed', 'true')
    return outcome
  }

  private created(pet: PetRecord): Outcome {
    return { status: 201, headers: ['location', `/v1/pets/${pet.id}`], body: this.petJson(pet) }
  }

  /** The order path the interface refers to without defining it. */
  listOrders(): never {
    throw new ApiError('not_implemented', 'store orders are not implemented by this service')
  }
}
