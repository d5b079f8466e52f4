// The SQLite adapter: the Store over one database file, each concern in a module beside it.
import type Database from 'better-sqlite3'
import { AsyncWriteBatcher } from '../async-write-batcher.js'
import type { CreateItem } from '../create-item.js'
import { DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY, IdempotencyCap } from '../idempotency-cap.js'
import type * as domain from '../store.js'
import { SqliteApiKeys } from './api-keys.js'
import { SqliteDataVersion } from './data-version.js'
import { DatabaseFile, writeProbe } from './faults.js'
import { SqliteIdempotency } from './idempotency.js'
import { openMigrated } from './open-migrated.js'
import { SqlitePetReads } from './pet-reads.js'
import { toPet } from './pet-row.js'
import { createTransaction, petInserter } from './pet-writes.js'
import { SnapshotReader } from './snapshot-reader.js'
import { StoreFaults } from './store-faults.js'
import { WalIndexVersion } from './wal-index-version.js'
import { SqliteWriter } from './writer.js'

/**
 * Opens the store: the main connection for reads and rare writes, a writer thread for the creates
 * (except in memory, which a thread cannot share: creates then commit on the main connection).
 */
export async function openSqliteStore(
  path: string,
  opts: { idempotencyKeysPerApiKey?: number } = {},
): Promise<SqliteStore> {
  const cap = new IdempotencyCap(
    opts.idempotencyKeysPerApiKey ?? DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY,
  )
  const db = await openMigrated(path)
  if (path === ':memory:') return new SqliteStore(db, null, null, null, cap)
  const file = DatabaseFile.opened(path)
  const walIndex = WalIndexVersion.open(path)
  // Snapshots are reused by data version, which only the WAL index gives exactly (snapshot-reader.ts).
  const reader = walIndex === null ? null : new SnapshotReader(path)
  const writer = new SqliteWriter(path, file.identity)
  return new SqliteStore(db, writer, walIndex, reader, cap, file)
}

export class SqliteStore implements domain.Store {
  readonly kind = 'sqlite'
  private readonly pets: SqlitePetReads
  private readonly idempotency: SqliteIdempotency
  private readonly apiKeys: SqliteApiKeys
  private readonly version: SqliteDataVersion
  private readonly faults: StoreFaults
  private readonly creates: AsyncWriteBatcher<CreateItem, domain.Pet>
  private readonly bulkInsert: (pets: domain.NewPet[], createdAt: number) => void
  private readonly pingStatement
  /** Without a writer thread (in memory), the creates commit on the main connection. */
  private readonly commitHere: ((items: CreateItem[]) => bigint[]) | null
  private readonly probeHere: () => void
  private closed = false

  constructor(
    private readonly db: Database.Database,
    private readonly writer: SqliteWriter | null = null,
    /** The version from the file's WAL index; without it, from PRAGMA data_version. */
    walIndex: WalIndexVersion | null = null,
    /** The fast lane's reads by id; without it, they run on the main connection. */
    private readonly reader: SnapshotReader | null = null,
    idempotencyCap = new IdempotencyCap(DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
    /** The file as opened; null in memory. */
    private readonly file: DatabaseFile | null = null,
  ) {
    this.faults = new StoreFaults(file)
    this.probeHere = writeProbe(db)
    this.pets = new SqlitePetReads(db, reader)
    this.idempotency = new SqliteIdempotency(db, idempotencyCap)
    this.apiKeys = new SqliteApiKeys(db)
    this.version = new SqliteDataVersion(db, walIndex)
    this.pingStatement = db.prepare<[], { ok: bigint }>('SELECT 1 AS ok')
    this.commitHere = writer === null ? createTransaction(db) : null
    // Group commit: creates arriving while a batch syncs go together in the next one.
    this.creates = new AsyncWriteBatcher((items) => this.commitCreates(items))
    const insertAll = db.transaction(petInserter(db))
    this.bulkInsert = (pets, createdAt) => insertAll.immediate(pets, createdAt)
  }

  private async commitCreates(items: CreateItem[]): Promise<domain.Pet[]> {
    let ids: ArrayLike<bigint>
    try {
      this.faults.throwIfFileFault()
      // The writer thread checks the file after each commit: no pet is acknowledged that a
      // restart would not find.
      ids = this.commitHere ? this.commitHere(items) : await this.writer!.commit(items)
      if (this.commitHere) this.version.committed()
    } catch (err) {
      throw this.faults.failed(err)
    }
    this.faults.succeeded()
    return items.map(({ pet }, i) => ({ id: ids[i]!, ...pet }))
  }

  /** A commit on the main connection, counted for dataVersion. */
  private write<T>(work: () => T): T {
    const result = this.faults.guarded(work)
    this.version.committed()
    return result
  }

  async listPets(query: domain.PetPageQuery): Promise<domain.Pet[]> {
    return this.faults.guarded(() => this.pets.page(query)).map(toPet)
  }

  async getPet(id: bigint): Promise<domain.Pet | null> {
    const row = this.faults.guarded(() => this.pets.byId(id))
    return row ? toPet(row) : null
  }

  /** Null while the file is gone: the caller then takes getPet's way, which reports it. */
  getPetJsonAt(id: bigint, version: number): string | null {
    if (this.faults.fileGone) return null
    return this.pets.jsonAt(id, version)
  }

  createPet(pet: domain.NewPet, completes?: domain.IdempotencyRef): Promise<domain.Pet> {
    if (this.closed) return Promise.reject(new Error('store is closed'))
    return this.creates.submit({ pet, completes })
  }

  createPetThen(
    pet: domain.NewPet,
    created: (pet: domain.Pet) => void,
    failed: (err: unknown) => void,
  ): void {
    if (this.closed) failed(new Error('store is closed'))
    else this.creates.submitThen({ pet, completes: undefined }, created, failed)
  }

  async insertPets(pets: domain.NewPet[]): Promise<void> {
    if (this.closed) throw new Error('store is closed')
    // Creates queued before this call get their ids first, as they would with any other order.
    await this.creates.idle()
    // One transaction, so one WAL sync (synchronous=FULL) makes the whole batch durable at once.
    this.write(() => this.bulkInsert(pets, Date.now()))
  }

  async claimIdempotencyKey(req: domain.IdempotencyClaimRequest): Promise<domain.IdempotencyClaim> {
    return this.write(() => this.idempotency.claim(req))
  }

  async releaseIdempotencyKey(ref: domain.IdempotencyRef): Promise<void> {
    this.write(() => this.idempotency.release(ref))
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    return this.write(() => this.idempotency.deleteBefore(cutoff))
  }

  async insertApiKey(k: domain.ApiKeyRecord): Promise<void> {
    this.write(() => this.apiKeys.insert(k))
  }

  async findApiKey(id: string): Promise<domain.ApiKeyRecord | null> {
    return this.findApiKeyNow(id)
  }

  findApiKeyNow(id: string): domain.ApiKeyRecord | null {
    return this.faults.guarded(() => this.apiKeys.find(id))
  }

  async listApiKeys(): Promise<domain.ApiKeyRecord[]> {
    return this.faults.guarded(() => this.apiKeys.list())
  }

  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    return this.write(() => this.apiKeys.revoke(id, at))
  }

  async countApiKeys(): Promise<number> {
    return this.faults.guarded(() => this.apiKeys.count())
  }

  /** Read from the WAL index when there is one; otherwise SQLite's data_version and own commits. */
  dataVersion(): domain.DataVersion {
    // Throwing makes callers use nothing cached, so nothing is served from a file that is gone.
    this.faults.throwIfFileFault()
    const version = this.version.current()
    // SQLite tells of a commit, not of what it changed: both move together.
    return { pets: version, keys: version }
  }

  /**
   * Fails while the file is gone or the disk fails. After a failure only a write that succeeds
   * (writeProbe, on the writer's connection) shows it is over; otherwise a read that costs nothing.
   */
  async ping(): Promise<void> {
    const fault = this.faults.checkFile()
    if (fault !== null) throw fault
    try {
      if (!this.faults.failing) this.pingStatement.get()
      else if (this.writer !== null) await this.writer.probe()
      else this.probeHere()
    } catch (err) {
      throw this.faults.failed(err)
    }
    this.faults.succeeded()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.faults.stop()
    await this.creates.idle()
    await this.writer?.close()
    this.reader?.close()
    this.version.close()
    this.db.close()
    this.file?.removeCompanionsIfMoved()
  }

  /** The main connection, the snapshot reader's, and the writer thread's once it started. */
  stats(): domain.StoreStats {
    const open = this.closed ? 0 : 1 + (this.reader ? 1 : 0) + (this.writer?.running ? 1 : 0)
    return {
      connections: { inUse: open, idle: 0, waiting: 0 },
      queuedWrites: this.creates.queued,
    }
  }

  onWriteBatch(listener: (size: number) => void): void {
    this.creates.onCommit(listener)
  }
}
