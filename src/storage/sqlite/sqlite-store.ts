// The SQLite adapter: the Store over one database file, its reads on the main connection and its
// writes on a writer thread (writer.ts).
import type Database from 'better-sqlite3'
import { type ApiKeyRow, foundApiKey, keyLookupSql, toApiKey } from '../api-key-row.js'
import { AsyncWriteBatcher } from '../async-write-batcher.js'
import type { CreateItem } from '../create-item.js'
import { ClaimReleasedError } from '../errors.js'
import { DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY, IdempotencyCap } from '../idempotency-cap.js'
import type * as domain from '../store.js'
import { hasCode, StoreFaults, WRITER_DIED } from './faults.js'
import { openMigrated } from './open-migrated.js'
import { LocalWriter, type SpawnWriter, SqliteWriter, type StoreWriter } from './writer.js'
import { encodeBatch, encodePets } from './writer-messages.js'
import {
  CLAIM_RELEASED_ID,
  sqliteWrites,
  type WriteAnswer,
  type WriteArgs,
  type WriteName,
} from './writes.js'

/**
 * Opens the store: the main connection for reads, a writer thread for every write (except in
 * memory, which a thread cannot share: writes then run on the main connection). `spawnWriter`
 * starts another writer thread only in tests.
 */
export async function openSqliteStore(
  path: string,
  opts: { idempotencyKeysPerApiKey?: number; spawnWriter?: SpawnWriter } = {},
): Promise<SqliteStore> {
  const cap = new IdempotencyCap(
    opts.idempotencyKeysPerApiKey ?? DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY,
  )
  const { db } = await openMigrated(path)
  if (path === ':memory:') {
    return new SqliteStore(db, new LocalWriter(sqliteWrites(db, cap)), new StoreFaults(null))
  }
  const faults = new StoreFaults(path)
  const data = { path, identity: faults.file!.identity, idempotencyKeysPerApiKey: cap.cap }
  return new SqliteStore(db, new SqliteWriter(data, opts.spawnWriter), faults)
}

/** A pets row as an array (`id, name, category_id, status`), which better-sqlite3 builds faster. */
type PetRow = [id: bigint, name: string, categoryId: bigint, status: domain.PetStatus | null]

const toPet = (row: PetRow): domain.Pet => {
  const status = row[3]
  return status === null
    ? { id: row[0], name: row[1], categoryId: row[2] }
    : { id: row[0], name: row[1], categoryId: row[2], status }
}

function readStatements(db: Database.Database) {
  const pets = <P extends unknown[]>(rest: string) =>
    db.prepare<P, PetRow>(`SELECT id, name, category_id, status FROM pets ${rest}`).raw(true)
  return {
    firstPage: pets<[number]>('ORDER BY id LIMIT ?'),
    pageAfter: pets<[bigint, number]>('WHERE id > ? ORDER BY id LIMIT ?'),
    firstPageOf: pets<[string, number]>('WHERE status = ? ORDER BY id LIMIT ?'),
    pageAfterOf: pets<[string, bigint, number]>('WHERE status = ? AND id > ? ORDER BY id LIMIT ?'),
    pet: pets<[bigint]>('WHERE id = ?'),
    key: db.prepare<[string], ApiKeyRow>(keyLookupSql('zeroblob(32)', '?')),
    keys: db.prepare<[], ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id'),
    keyCount: db.prepare<[], bigint>('SELECT count(*) FROM api_keys').pluck(),
    ping: db.prepare('SELECT 1'),
    // Moves with every commit by another connection: the writer thread's, another process's.
    dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck().safeIntegers(false),
  }
}

/** The Store over SQLite, whose reads never wait. */
export class SqliteStore implements domain.Store {
  readonly kind = 'sqlite'
  private readonly read: ReturnType<typeof readStatements>
  private readonly creates: AsyncWriteBatcher<CreateItem, domain.Pet>
  private closed = false

  constructor(
    private readonly db: Database.Database,
    private readonly writer: StoreWriter,
    private readonly faults: StoreFaults,
  ) {
    this.read = readStatements(db)
    // Group commit: creates arriving while a batch syncs go together in the next one.
    this.creates = new AsyncWriteBatcher((items) => this.commitCreates(items))
  }

  private async commitCreates(items: CreateItem[]): Promise<(domain.Pet | Error)[]> {
    // The writer thread checks the file after each commit: no pet a restart would miss is answered.
    const ids = await this.write('commit', [encodeBatch(items)])
    this.faults.succeeded()
    return items.map(({ pet }, i) =>
      ids[i] === CLAIM_RELEASED_ID ? new ClaimReleasedError() : { id: ids[i]!, ...pet },
    )
  }

  /** A write, with its faults mapped; each commit moves the data version (writer.ts). */
  private async write<K extends WriteName>(
    type: K,
    args: WriteArgs<K>,
    transfer?: ArrayBuffer[],
  ): Promise<WriteAnswer<K>> {
    try {
      this.faults.throwIfFileFault()
      return await this.writer.write(type, args, transfer)
    } catch (err) {
      throw this.faults.failed(err)
    }
  }

  async listPets({ afterId, status, limit }: domain.PetPageQuery): Promise<domain.Pet[]> {
    const { read } = this
    const rows = this.faults.guarded(() => {
      if (status === null) {
        return afterId === null ? read.firstPage.all(limit) : read.pageAfter.all(afterId, limit)
      }
      return afterId === null
        ? read.firstPageOf.all(status, limit)
        : read.pageAfterOf.all(status, afterId, limit)
    })
    return rows.map(toPet)
  }

  async getPet(id: bigint): Promise<domain.Pet | null> {
    const row = this.faults.guarded(() => this.read.pet.get(id))
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
    const columns = encodePets(pets)
    await this.write('insertPets', [columns], [columns.categoryIds.buffer as ArrayBuffer])
  }

  async claimIdempotencyKey(req: domain.IdempotencyClaimRequest): Promise<domain.IdempotencyClaim> {
    try {
      return await this.write('claim', [req])
    } catch (err) {
      // A claim whose writer thread died may have been written: freed by its own token, or a retry
      // would be refused as in progress until the lease ends.
      if (hasCode(err, WRITER_DIED)) {
        const ref = { apiKeyId: req.apiKeyId, key: req.key, token: req.token }
        await this.writer.write('release', [ref]).catch(() => {})
      }
      throw err
    }
  }

  async releaseIdempotencyKey(ref: domain.IdempotencyClaimRef): Promise<void> {
    await this.write('release', [ref])
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    return this.write('purge', [cutoff])
  }

  async insertApiKey(k: domain.ApiKeyRecord): Promise<void> {
    await this.write('insertKey', [k])
  }

  async findApiKey(id: string): Promise<domain.ApiKeyRecord | null> {
    return this.faults.guarded(() => foundApiKey(this.read.key.get(id)))
  }

  async listApiKeys(): Promise<domain.ApiKeyRecord[]> {
    return this.faults.guarded(() => this.read.keys.all().map(toApiKey))
  }

  /** Refused from the next request on: the commit moves the data version before this resolves. */
  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    return this.write('revokeKey', [id, at])
  }

  async countApiKeys(): Promise<number> {
    return this.faults.guarded(() => Number(this.read.keyCount.get()))
  }

  /** SQLite's data_version, and the commits on the main connection, which it leaves out. */
  async dataVersion(): Promise<domain.DataVersion> {
    // Throwing makes callers use nothing cached, so nothing is served from a file that is gone.
    this.faults.throwIfFileFault()
    const version = this.read.dataVersion.get()! + this.writer.ownCommits
    // SQLite tells of a commit, not of what it changed: both move together.
    return { pets: version, keys: version }
  }

  /** Fails while the file is gone or the disk fails: after a failure, until a probe write works. */
  async ping(): Promise<void> {
    const fault = this.faults.checkFile()
    if (fault !== null) throw fault
    if (this.faults.failing) await this.write('probe', [])
    else this.faults.guarded(() => this.read.ping.get())
    this.faults.succeeded()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.faults.stop()
    await this.creates.idle()
    await this.writer.close()
    this.db.close()
    this.faults.removeCompanionsIfMoved()
  }

  /** The main connection, and the writer thread's once it started. */
  stats(): domain.StoreStats {
    const open = this.closed ? 0 : 1 + (this.writer.running ? 1 : 0)
    return {
      connections: { inUse: open, idle: 0, waiting: 0 },
      queuedWrites: this.creates.queued,
    }
  }

  onWriteBatch(listener: (size: number) => void): void {
    this.creates.onCommit(listener)
  }
}
