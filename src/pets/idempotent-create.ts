// The life of an Idempotency-Key claim, on every store: claimed, then completed by its create in
// the create's own transaction, or released when the create failed or its outcome is unknown.
import { createHash, randomUUID } from 'node:crypto'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Deadline } from '../storage/deadline.js'
import type { IdempotencyClaimRef, IdempotencyRef, NewPet, Pet, Store } from '../storage/store.js'

export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000
/** How long a claimed key stays "in progress" if the request holding it dies without finishing. */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000

/** Claims whose release failed, remembered at most; past it the oldest go (their lease ends them). */
const MAX_UNRELEASED = 10_000

/** The same JSON value gives the same hash whatever the key order or spacing of the body was. */
export function hashNewPet(pet: NewPet): string {
  const canonical = JSON.stringify([pet.name, pet.categoryId.toString(), pet.status ?? null])
  return createHash('sha256').update(canonical).digest('hex')
}

/** A create with an Idempotency-Key as the store settled it: a new pet, or the first one again. */
export type IdempotentResult = { replayed: false; pet: Pet } | { replayed: true; petId: bigint }

export class IdempotentCreates {
  /**
   * Claims whose create and release both failed, by `apiKeyId\nkey`, with their token and lease
   * end: the retry releases it first, rather than wait out the lease with 409s.
   */
  private readonly unreleased = new Map<string, { token: string; leaseEnd: number }>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /**
   * Whatever ends the create (an error, a timeout, a lost connection, a writer that died), its
   * claim is released, which is safe while the create may still commit: a release waits for that
   * commit or leaves the create nothing to complete (store.ts IdempotencyClaimRef). So a retry
   * gets the first pet, 409 while the release is pending, or a new create: never a second pet.
   */
  async create(
    pet: NewPet,
    ref: IdempotencyRef,
    deadline: Deadline | undefined,
  ): Promise<IdempotentResult> {
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
        return { replayed: true, petId: claim.petId }
      case 'claimed':
        try {
          return { replayed: false, pet: await this.store.createPet(pet, claimRef, deadline) }
        } catch (err) {
          this.release(claimRef, deadline)
          throw err
        }
    }
  }

  /**
   * Frees the claim of a failed create, or remembers it for the next claim of its key. Not waited
   * for: the answer (503) is due now, and a retry before it is done gets 409.
   */
  private release(ref: IdempotencyClaimRef, deadline: Deadline | undefined): void {
    this.store.releaseIdempotencyKey(ref, deadline).catch(() => {
      if (this.unreleased.size >= MAX_UNRELEASED) {
        this.unreleased.delete(this.unreleased.keys().next().value!)
      }
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
  purgeExpired(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - IDEMPOTENCY_RETENTION_MS)
    return this.store.deleteIdempotencyKeysBefore(cutoff)
  }
}
