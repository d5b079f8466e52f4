// The rules of the pet catalogue, independent of HTTP: paging, creation and idempotent replay.
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Deadline } from '../storage/deadline.js'
import type { NewPet, Pet, PetStatus, Store } from '../storage/store.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import { IdempotentCreates } from './idempotent-create.js'
import type { NewPetBody } from './schemas.js'

export interface PetPage {
  pets: Pet[]
  /** Cursor of the next page, or null on the last page. */
  nextCursor: string | null
}

export interface CreateResult {
  pet: Pet
  replayed: boolean
}

/** The pet a valid NewPet body asks for; an absent status stays absent. */
export function newPetOf(body: NewPetBody): NewPet {
  const pet: NewPet = { name: body.name, categoryId: body.categoryId }
  if (body.status !== undefined) pet.status = body.status
  return pet
}

export class PetService {
  private readonly idempotent: IdempotentCreates

  constructor(
    private readonly store: Store,
    clock: Clock,
  ) {
    this.idempotent = new IdempotentCreates(store, clock)
  }

  async listPage(
    query: { limit: number; status?: PetStatus; cursor?: string },
    deadline?: Deadline,
  ): Promise<PetPage> {
    const afterId = query.cursor === undefined ? null : decodeCursor(query.cursor)
    // One extra row tells whether a next page exists without a count query.
    const rows = await this.store.listPets(
      { afterId, status: query.status ?? null, limit: query.limit + 1 },
      deadline,
    )
    if (rows.length <= query.limit) return { pets: rows, nextCursor: null }
    const pets = rows.slice(0, query.limit)
    return { pets, nextCursor: encodeCursor(pets[pets.length - 1]!.id) }
  }

  async get(id: bigint, deadline?: Deadline): Promise<Pet> {
    const pet = await this.store.getPet(id, deadline)
    if (!pet) throw new ApiError('not_found', `no pet with id ${id}`)
    return pet
  }

  async create(
    pet: NewPet,
    apiKeyId: string,
    idempotencyKey?: string,
    deadline?: Deadline,
  ): Promise<CreateResult> {
    if (idempotencyKey === undefined) {
      return { pet: await this.store.createPet(pet, undefined, deadline), replayed: false }
    }
    const result = await this.idempotent.create(pet, { apiKeyId, key: idempotencyKey }, deadline)
    if (!result.replayed) return { pet: result.pet, replayed: false }
    return { pet: await this.get(result.petId, deadline), replayed: true }
  }

  /** Drops idempotency records past their 24 hours; returns how many went. */
  purgeExpiredIdempotencyKeys(): Promise<number> {
    return this.idempotent.purgeExpired()
  }
}
