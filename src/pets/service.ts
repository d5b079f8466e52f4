// The rules of the pet catalogue, independent of HTTP: paging, creation and idempotent replay.
import { createHash } from 'node:crypto'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { IdempotencyRef, NewPet, Pet, PetStatus, Store } from '../storage/store.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import type { NewPetBody } from './schemas.js'

export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000
/** How long a claimed key stays "in progress" if the request holding it dies without finishing. */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000

export interface PetPage {
  pets: Pet[]
  /** Cursor of the next page, or null on the last page. */
  nextCursor: string | null
}

export interface CreateResult {
  pet: Pet
  replayed: boolean
}

/** The same JSON value gives the same hash whatever the key order or spacing of the body was. */
export function hashNewPet(pet: NewPet): string {
  const canonical = JSON.stringify([pet.name, pet.categoryId.toString(), pet.status ?? null])
  return createHash('sha256').update(canonical).digest('hex')
}

/** The pet a valid NewPet body asks for; an absent status stays absent. */
export function newPetOf(body: NewPetBody): NewPet {
  const pet: NewPet = { name: body.name, categoryId: body.categoryId }
  if (body.status !== undefined) pet.status = body.status
  return pet
}

/** Claims whose release failed, remembered at most; past it the oldest go (their lease ends them). */
const MAX_UNRELEASED = 10_000

export class PetService {
  /**
   * Claims whose create and release both failed, by `apiKeyId\nkey`, with their lease's end: the
   * retry releases it first, rather than wait out the lease with 409s.
   */
  private readonly unreleased = new Map<string, number>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async listPage(query: { limit: number; status?: PetStatus; cursor?: string }): Promise<PetPage> {
    const afterId = query.cursor === undefined ? null : decodeCursor(query.cursor)
    // One extra row tells whether a next page exists without a count query.
    const rows = await this.store.listPets({
      afterId,
      status: query.status ?? null,
      limit: query.limit + 1,
    })
    if (rows.length <= query.limit) return { pets: rows, nextCursor: null }
    const pets = rows.slice(0, query.limit)
    return { pets, nextCursor: encodeCursor(pets[pets.length - 1]!.id) }
  }

  /** create without an Idempotency-Key, settled through callbacks: no promise per create. */
  createThen(pet: NewPet, created: (pet: Pet) => void, failed: (err: unknown) => void): void {
    if (this.store.createPetThen) this.store.createPetThen(pet, created, failed)
    else this.store.createPet(pet).then(created, failed)
  }

  async get(id: bigint): Promise<Pet> {
    const pet = await this.store.getPet(id)
    if (!pet) throw new ApiError('not_found', `no pet with id ${id}`)
    return pet
  }

  async create(pet: NewPet, apiKeyId: string, idempotencyKey?: string): Promise<CreateResult> {
    if (idempotencyKey === undefined) {
      return { pet: await this.store.createPet(pet), replayed: false }
    }
    const ref: IdempotencyRef = { apiKeyId, key: idempotencyKey }
    await this.releaseLeftOver(ref)
    const claim = await this.store.claimIdempotencyKey({
      ...ref,
      requestHash: hashNewPet(pet),
      now: this.clock.now(),
      retentionMs: IDEMPOTENCY_RETENTION_MS,
      leaseMs: IDEMPOTENCY_LEASE_MS,
    })
    switch (claim.outcome) {
      case 'mismatch':
        throw new ApiError(
          'idempotency_key_reused',
          'Idempotency-Key was already used with a different request body',
        )
      case 'in_progress':
        throw new ApiError(
          'idempotency_key_in_progress',
          'a request with this Idempotency-Key is still in progress; retry later',
          { 'retry-after': '1' },
        )
      case 'completed':
        return { pet: await this.get(claim.petId), replayed: true }
      case 'claimed':
        try {
          return { pet: await this.store.createPet(pet, ref), replayed: false }
        } catch (err) {
          await this.release(ref)
          throw err
        }
    }
  }

  /** Frees the claim of a failed create, or remembers it for the next claim of its key. */
  private async release(ref: IdempotencyRef): Promise<void> {
    try {
      await this.store.releaseIdempotencyKey(ref)
    } catch {
      if (this.unreleased.size >= MAX_UNRELEASED) {
        this.unreleased.delete(this.unreleased.keys().next().value!)
      }
      this.unreleased.set(`${ref.apiKeyId}\n${ref.key}`, this.clock.nowMs() + IDEMPOTENCY_LEASE_MS)
    }
  }

  /** Releases a claim left by a failed create of this key, while its lease still holds it. */
  private async releaseLeftOver(ref: IdempotencyRef): Promise<void> {
    const name = `${ref.apiKeyId}\n${ref.key}`
    const leaseEnd = this.unreleased.get(name)
    if (leaseEnd === undefined) return
    if (leaseEnd > this.clock.nowMs()) await this.store.releaseIdempotencyKey(ref)
    this.unreleased.delete(name)
  }

  /** Drops idempotency records past their 24 hours; returns how many went. */
  purgeExpiredIdempotencyKeys(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - IDEMPOTENCY_RETENTION_MS)
    return this.store.deleteIdempotencyKeysBefore(cutoff)
  }
}
