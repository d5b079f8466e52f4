import type { Deadline, IdempotencyClaimRef, NewPet } from './store.js'

/** A create waiting for its group commit, with the idempotency claim it completes, if any. */
export interface CreateItem {
  pet: NewPet
  completes: IdempotencyClaimRef | undefined
  /** Its request's (src/storage/deadline.ts); a batch is bounded by its earliest. */
  deadline?: Deadline
}
