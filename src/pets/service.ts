// The rules of the pet catalogue, independent of HTTP: paging, creation and idempotent replay. An
// Idempotency-Key is claimed, then completed by its create in the create's own transaction, or
// released when the create failed or its outcome is unknown.
import { createHash, randomUUID } from 'node:crypto'
import { FifoMap } from 'toad-cache'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Deadline } from '../storage/deadline.js'
import type { IdempotencyClaimRef, IdempotencyRef, NewPet, Pet, Store } from '../storage/store.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import type { ListPetsQueryType } from './schemas.js'

const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000
/** How long a claimed key stays "in progress" if the request holding it dies without finishing. */
const IDEMPOTENCY_LEASE_MS = 60 * 1000

/** The same JSON value gives the same hash whatever the key order or spacing of the body was. */
function hashNewPet(pet: NewPet): string {
  const canonical = JSON.stringify([pet.name, pet.categoryId.toString(), pet.status ?? null])
  return createHash('sha256').update(canonical).digest('hex')
}

export class PetService {
  /** Claims whose create and release both failed, by `apiKeyId\nkey`: the retry releases it first,
   * rather than wait out the lease with 409s. Past 10,000 the oldest go (their lease ends them). */
  private readonly unreleased = new FifoMap<{ token: string; leaseEnd: number }>(10_000)

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** A page of pets, and the cursor of the next page (null on the last page). */
  async listPage(query: ListPetsQueryType, deadline?: Deadline) {
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

  /**
   * With an Idempotency-Key, whatever ends the create (an error, a timeout, a lost connection), its
   * claim is released, safe while the create may still commit (store.ts IdempotencyClaimRef): a
   * retry gets the first pet, 409 while the release is pending, or a new create; never a second.
   */
  async create(
    pet: NewPet,
    apiKeyId: string,
    idempotencyKey?: string,
    deadline?: Deadline,
  ): Promise<{ pet: Pet; replayed: boolean }> {
    if (idempotencyKey === undefined) {
      return { pet: await this.store.createPet(pet, undefined, deadline), replayed: false }
    }
    const ref: IdempotencyRef = { apiKeyId, key: idempotencyKey }
    await this.releaseLeftOver(ref, deadline)
    const claimRef: IdempotencyClaimRef = { ...ref, token: randomUUID() }
    const claim = await this.store.claimIdempotencyKey({
      ...claimRef,
      requestHash: hashNewPet(pet),
      now: this.clock.now(),
      retentionMs: IDEMPOTENCY_RETENTION_MS,
      leaseMs: IDEMPOTENCY_LEASE_MS,
      deadline,
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
        return { pet: await this.get(claim.petId, deadline), replayed: true }
      case 'claimed':
        try {
          return { pet: await this.store.createPet(pet, claimRef, deadline), replayed: false }
        } catch (err) {
          this.release(claimRef, deadline)
          throw err
        }
    }
  }

  /** Frees the claim of a failed create, or remembers it for the next claim of its key. Not waited
   * for: the answer (503) is due now, and a retry before it is done gets 409. */
  private release(ref: IdempotencyClaimRef, deadline: Deadline | undefined): void {
    this.store.releaseIdempotencyKey(ref, deadline).catch(() => {
      const leaseEnd = this.clock.nowMs() + IDEMPOTENCY_LEASE_MS
      this.unreleased.set(`${ref.apiKeyId}\n${ref.key}`, { token: ref.token, leaseEnd })
    })
  }

  /** Releases a claim left by a failed create of this key, while its lease still holds it. */
  private async releaseLeftOver(ref: IdempotencyRef, deadline: Deadline | undefined) {
    const name = `${ref.apiKeyId}\n${ref.key}`
    const left = this.unreleased.get(name)
    if (left === undefined) return
    if (left.leaseEnd > this.clock.nowMs()) {
      await this.store.releaseIdempotencyKey({ ...ref, token: left.token }, deadline)
    }
    this.unreleased.delete(name)
  }

  /** Drops idempotency records past their 24 hours; returns how many went. */
  purgeExpiredIdempotencyKeys(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - IDEMPOTENCY_RETENTION_MS)
    return this.store.deleteIdempotencyKeysBefore(cutoff)
  }
}
