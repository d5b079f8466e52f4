// The SQLite adapter: the Store over one database file, each concern in a module beside it.
import type Database from 'better-sqlite3'
import { AsyncWriteBatcher } from '../async-write-batcher.js'
import type { CreateItem } from '../create-item.js'
import { ClaimReleasedError } from '../errors.js'
import { DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY, IdempotencyCap } from '../idempotency-cap.js'
import type * as domain from '../store.js'
import { SqliteApiKeys } from './api-keys.js'
import { SqliteDataVersion } from './data-version.js'
import { DatabaseFile, hasCode, WRITER_DIED } from './faults.js'
import { openMigrated } from './open-migrated.js'
import { SqlitePetReads } from './pet-reads.js'
import { toPet } from './pet-row.js'
import { CLAIM_RELEASED_ID } from './pet-writes.js'
import { SnapshotReader } from './snapshot-reader.js'
import { StoreFaults } from './store-faults.js'
import { LocalWriter, type StoreWriter } from './store-writer.js'
import { WalIndexVersion } from './wal-index-version.js'
import { type SpawnWriter, SqliteWriter } from './writer.js'
import { SqliteWrites } from './writes.js'

/** How the store is opened; `spawnWriter` starts another writer thread only in tests. */
export interface SqliteStoreOptions {
  idempotencyKeysPerApiKey?: number
  spawnWriter?: SpawnWriter
}

/**
 * Opens the store: the main connection for reads, a writer thread for every write (except in
 * memory, which a thread cannot share: writes then run on the main connection).
 */
export async function openSqliteStore(
  path: string,
  opts: SqliteStoreOptions = {},
): Promise<SqliteStore> {
  const idempotencyKeysPerApiKey =
    opts.idempotencyKeysPerApiKey ?? DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY
  const cap = new IdempotencyCap(idempotencyKeysPerApiKey)
  const { db } = await openMigrated(path)
  if (path === ':memory:') return new SqliteStore(db, null, null, null, cap)
  const file = DatabaseFile.opened(path)
  const walIndex = WalIndexVersion.open(path)
  // Snapshots are reused by data version, which only the WAL index gives exactly (snapshot-reader.ts).
  const reader = walIndex === null ? null : new SnapshotReader(path)
  const data = { path, identity: file.identity, idempotencyKeysPerApiKey }
  const writer = new SqliteWriter(data, opts.spawnWriter)
  return new SqliteStore(db, writer, walIndex, reader, cap, file)
}

/** The Store over SQLite, whose reads never wait: it gives the same-turn reads too. */
export class SqliteStore implements domain.Store, domain.SameTurnReads {
  readonly kind = 'sqlite'
  private readonly pets: SqlitePetReads
  private readonly apiKeys: SqliteApiKeys
  private readonly version: SqliteDataVersion
  private readonly faults: StoreFaults
  private readonly creates: AsyncWriteBatcher<CreateItem, domain.Pet>
  private readonly writer: StoreWriter
  private readonly pingStatement
  private closed = false

  constructor(
    private readonly db: Database.Database,
    /** The writer thread; null in memory, where the writes run on the main connection. */
    writer: StoreWriter | null = null,
    /** The version from the file's WAL index; without it, from PRAGMA data_version. */
    walIndex: WalIndexVersion | null = null,
    /** The fast lane's reads by id; without it, they run on the main connection. */
    private readonly reader: SnapshotReader | null = null,
    /** Counts the records of each API key for the writes on the main connection. */
    idempotencyCap = new IdempotencyCap(DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
    /** The file as opened; null in memory. */
    private readonly file: DatabaseFile | null = null,
  ) {
    this.faults = new StoreFaults(file)
    this.pets = new SqlitePetReads(db, reader)
    this.apiKeys = new SqliteApiKeys(db)
    this.version = new SqliteDataVersion(db, walIndex)
    this.pingStatement = db.prepare<[], { ok: bigint }>('SELECT 1 AS ok')
    this.writer = writer ?? new LocalWriter(new SqliteWrites(db, idempotencyCap), this.version)
    // Group commit: creates arriving while a batch syncs go together in the next one.
    this.creates = new AsyncWriteBatcher((items) => this.commitCreates(items))
  }

  private async commitCreates(items: CreateItem[]): Promise<(domain.Pet | Error)[]> {
    let ids: ArrayLike<bigint>
    try {
      this.faults.throwIfFileFault()
      // The writer thread checks the file after each commit: no pet is acknowledged that a
      // restart would not find.
      ids = await this.writer.commit(items)
    } catch (err) {
      throw this.faults.failed(err)
    }
    this.faults.succeeded()
    return items.map(({ pet }, i) =>
      ids[i] === CLAIM_RELEASED_ID ? new ClaimReleasedError() : { id: ids[i]!, ...pet },
    )
  }

  /**
   * A write other than a create, with its faults mapped. A commit on another connection moves
   * the data version by itself; LocalWriter counts those on the main connection.
   */
  private async write<T>(work: () => Promise<T>): Promise<T> {
    try {
      this.faults.throwIfFileFault()
      return await work()
    } catch (err) {
      throw this.faults.failed(err)
    }
  }

  async listPets(query: domain.PetPageQuery): Promise<domain.Pet[]> {
    return this.faults.guarded(() => this.pets.page(query)).map(toPet)
  }

  async getPet(id: bigint): Promise<domain.Pet | null> {
    const row = this.faults.guarded(() => this.pets.byId(id))
    return row ? toPet(row) : null
  }

  /** Null while the file is gone: the caller then takes getPet's way, which reports it. */
  petAt(id: bigint, version: number): domain.Pet | null {
    if (this.faults.fileGone) return null
    const row = this.pets.byIdAt(id, version)
    return row ? toPet(row) : null
  }

  createPet(pet: domain.NewPet, completes?: domain.IdempotencyClaimRef): Promise<domain.Pet> {
    if (this.closed) return Promise.reject(new Error('store is closed'))
    return this.creates.submit({ pet, completes })
  }

  async insertPets(pets: domain.NewPet[]): Promise<void> {
    if (this.closed) throw new Error('store is closed')
    // Creates queued before this call get their ids first, as they would with any other order.
    await this.creates.idle()
    // One transaction, so one WAL sync (synchronous=FULL) makes the whole batch durable at once.
    await this.write(() => this.writer.insertPets(pets, Date.now()))
  }

  async claimIdempotencyKey(req: domain.IdempotencyClaimRequest): Promise<domain.IdempotencyClaim> {
    try {
      return await this.write(() => this.writer.claim(req))
    } catch (err) {
      // A claim whose writer thread died may have been written: freed by its own token, so that a
      // retry is not refused as in progress until the lease ends.
      if (hasCode(err, WRITER_DIED)) {
        const ref = { apiKeyId: req.apiKeyId, key: req.key, token: req.token }
        await this.writer.release(ref).catch(() => {})
      }
      throw err
    }
  }

  async releaseIdempotencyKey(ref: domain.IdempotencyClaimRef): Promise<void> {
    await this.write(() => this.writer.release(ref))
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    return this.write(() => this.writer.purge(cutoff))
  }

  async insertApiKey(k: domain.ApiKeyRecord): Promise<void> {
    await this.write(() => this.writer.insertKey(k))
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

  /** Refused from the next request on: the commit moves the data version before this resolves. */
  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    return this.write(() => this.writer.revokeKey(id, at))
  }

  async countApiKeys(): Promise<number> {
    return this.faults.guarded(() => this.apiKeys.count())
  }

  /** Read from the WAL index when there is one; otherwise SQLite's data_version and own commits. */
  async dataVersion(): Promise<domain.DataVersion> {
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
      else await this.writer.probe()
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
    await this.writer.close()
    this.reader?.close()
    this.version.close()
    this.db.close()
    this.file?.removeCompanionsIfMoved()
  }

  /** The main connection, the snapshot reader's, and the writer thread's once it started. */
  stats(): domain.StoreStats {
    const open = this.closed ? 0 : 1 + (this.reader ? 1 : 0) + (this.writer.running ? 1 : 0)
    return {
      connections: { inUse: open, idle: 0, waiting: 0 },
      queuedWrites: this.creates.queued,
    }
  }

  onWriteBatch(listener: (size: number) => void): void {
    this.creates.onCommit(listener)
  }
}
