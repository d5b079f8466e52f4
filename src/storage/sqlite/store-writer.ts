// Where the SQLite store's writes run: on the writer thread (writer.ts) for a file, or on the main
// connection (LocalWriter) for an in-memory database, which no other thread can open.
import type { CreateItem } from '../create-item.js'
import type {
  ApiKeyRecord,
  IdempotencyClaim,
  IdempotencyClaimRef,
  IdempotencyClaimRequest,
  NewPet,
} from '../store.js'
import type { SqliteDataVersion } from './data-version.js'
import type { SqliteWrites } from './writes.js'

/** SqliteWrites, each write settling once it is durable (or failed). */
export interface StoreWriter {
  /** Whether the writer has a connection of its own open (the thread's), for the store's stats. */
  readonly running: boolean
  commit(items: CreateItem[]): Promise<ArrayLike<bigint>>
  probe(): Promise<void>
  claim(request: IdempotencyClaimRequest): Promise<IdempotencyClaim>
  release(ref: IdempotencyClaimRef): Promise<void>
  purge(cutoff: Date): Promise<number>
  insertKey(key: ApiKeyRecord): Promise<void>
  revokeKey(id: string, at: Date): Promise<boolean>
  insertPets(pets: readonly NewPet[], createdAt: number): Promise<void>
  /** Call once no write is in flight. */
  close(): Promise<void>
}

/**
 * The writes on the main connection, whose own commits its PRAGMA data_version does not count:
 * each is counted here, so that cached reads stay exact.
 */
export class LocalWriter implements StoreWriter {
  readonly running = false

  constructor(
    private readonly writes: SqliteWrites,
    private readonly version: SqliteDataVersion,
  ) {}

  private counted<T>(result: T): T {
    this.version.committed()
    return result
  }

  async commit(items: CreateItem[]): Promise<bigint[]> {
    return this.counted(this.writes.commit(items))
  }

  async probe(): Promise<void> {
    this.writes.probe()
  }

  async claim(request: IdempotencyClaimRequest): Promise<IdempotencyClaim> {
    return this.counted(this.writes.claim(request))
  }

  async release(ref: IdempotencyClaimRef): Promise<void> {
    this.counted(this.writes.release(ref))
  }

  async purge(cutoff: Date): Promise<number> {
    return this.counted(this.writes.purge(cutoff))
  }

  async insertKey(key: ApiKeyRecord): Promise<void> {
    this.counted(this.writes.insertKey(key))
  }

  async revokeKey(id: string, at: Date): Promise<boolean> {
    return this.counted(this.writes.revokeKey(id, at))
  }

  async insertPets(pets: readonly NewPet[], createdAt: number): Promise<void> {
    this.counted(this.writes.insertPets(pets, createdAt))
  }

  async close(): Promise<void> {}
}
