import type { IdempotencyRef, NewPet } from './store.js'

/** A create waiting for its group commit, with the idempotency claim it completes, if any. */
export interface CreateItem {
  pet: NewPet
  completes: IdempotencyRef | undefined
}
