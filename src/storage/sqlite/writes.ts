// Every write of the SQLite store, on one connection: the writer thread's (writer-thread.ts), or
// the main connection's for an in-memory database, which no other thread can open.
import type Database from 'better-sqlite3'
import type { CreateItem } from '../create-item.js'
import type { IdempotencyCap } from '../idempotency-cap.js'
import type {
  ApiKeyRecord,
  IdempotencyClaim,
  IdempotencyClaimRef,
  IdempotencyClaimRequest,
  NewPet,
} from '../store.js'
import { SqliteApiKeys } from './api-keys.js'
import { writeProbe } from './faults.js'
import { SqliteIdempotency } from './idempotency.js'
import { createTransaction, petInserter } from './pet-writes.js'

export class SqliteWrites {
  /** A batch of creates in one transaction (pet-writes.ts); their ids in order. */
  readonly commit: (items: CreateItem[]) => bigint[]
  /** A real write and sync that changes nothing (faults.ts). */
  readonly probe: () => void
  private readonly idempotency: SqliteIdempotency
  private readonly apiKeys: SqliteApiKeys
  private readonly bulkInsert: (pets: readonly NewPet[], createdAt: number) => void

  constructor(db: Database.Database, cap: IdempotencyCap) {
    this.commit = createTransaction(db)
    this.probe = writeProbe(db)
    this.idempotency = new SqliteIdempotency(db, cap)
    this.apiKeys = new SqliteApiKeys(db)
    const insertAll = db.transaction(petInserter(db))
    this.bulkInsert = (pets, createdAt) => insertAll.immediate(pets, createdAt)
  }

  claim(req: IdempotencyClaimRequest): IdempotencyClaim {
    return this.idempotency.claim(req)
  }

  release(ref: IdempotencyClaimRef): void {
    this.idempotency.release(ref)
  }

  /** Deletes the idempotency records created before `cutoff`; returns how many. */
  purge(cutoff: Date): number {
    return this.idempotency.deleteBefore(cutoff)
  }

  insertKey(key: ApiKeyRecord): void {
    // From another thread secretHash arrives as a Uint8Array, which SQLite binds as a Buffer's bytes.
    this.apiKeys.insert(key)
  }

  /** True when the key was there and not yet revoked. */
  revokeKey(id: string, at: Date): boolean {
    return this.apiKeys.revoke(id, at)
  }

  /** The pets in one transaction (one WAL sync), all created at `createdAt`. */
  insertPets(pets: readonly NewPet[], createdAt: number): void {
    this.bulkInsert(pets, createdAt)
  }
}
