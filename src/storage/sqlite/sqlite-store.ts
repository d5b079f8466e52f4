import { setTimeout } from 'node:timers/promises'
import type Database from 'better-sqlite3'
import {
  type ApiKeyRow,
  apiKeyValues,
  foundApiKey,
  keyLookupColumns,
  toApiKey,
} from '../api-key-row.js'
import { AsyncWriteBatcher } from '../async-write-batcher.js'
import { StorageUnavailableError } from '../errors.js'
import { DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY, IdempotencyCap } from '../idempotency-cap.js'
import { decideIdempotencyClaim, type IdempotencyRow } from '../idempotency-claim.js'
import type {
  ApiKeyRecord,
  DataVersion,
  IdempotencyClaim,
  IdempotencyClaimRequest,
  IdempotencyRef,
  NewPet,
  Pet,
  PetPageQuery,
  Store,
  StoreStats,
} from '../store.js'
import { openDatabase } from './connection.js'
import { DatabaseFile, FILE_REPLACED, hasCode, unavailableOr, writeProbe } from './faults.js'
import { migrateSqlite } from './migrate.js'
import { PET_BY_ID, PET_JSON_BY_ID, type PetRow, toPet } from './pet-row.js'
import { type CreateItem, createTransaction, petInserter } from './pet-writes.js'
import { SnapshotReader } from './snapshot-reader.js'
import { WalIndexVersion } from './wal-index-version.js'
import { SqliteWriter } from './writer.js'

const BUSY_ATTEMPTS = 5

/**
 * A connection to the file with the schema up to date. Where waiting could deadlock (two
 * connections each holding a read lock and wanting the write lock), SQLite answers SQLITE_BUSY at
 * once instead of waiting out busy_timeout; processes starting together on a new file can meet
 * that. Switching to WAL and the migrations are idempotent, so the loser tries again.
 */
async function openMigrated(path: string): Promise<Database.Database> {
  for (let attempt = 1; ; attempt++) {
    let db: Database.Database | undefined
    try {
      db = openDatabase(path, { create: true })
      await migrateSqlite(db)
      return db
    } catch (err) {
      db?.close()
      if (!hasCode(err, 'SQLITE_BUSY') || attempt === BUSY_ATTEMPTS) throw err
      await setTimeout(20 * attempt)
    }
  }
}

/**
 * Opens the store: one connection on the main thread for reads and rare writes (keys,
 * idempotency claims), and a writer thread with its own connection for the creates. An in-memory
 * database cannot be shared with a thread, so its creates commit on the main connection.
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

/** How often the path is checked to name the opened file, besides by ping and after each commit. */
const FILE_CHECK_MS = 1000

export class SqliteStore implements Store {
  readonly kind = 'sqlite'
  private readonly statements
  private readonly creates: AsyncWriteBatcher<CreateItem, Pet>
  private readonly bulkInsert: (pets: NewPet[], createdAt: number) => void
  private closed = false
  /** Commits made through this connection, which its own data_version does not count. */
  private ownCommits = 0
  /**
   * Set while the path does not name the opened file: every operation fails with it, for what it
   * would read or write is not what a restart finds.
   */
  private fileFault: StorageUnavailableError | null = null
  /** The last fault of the disk or file since a write last succeeded; readiness then probes. */
  private lastFailure: StorageUnavailableError | null = null
  private readonly fileCheck: NodeJS.Timeout | null = null
  private readonly probeHere: () => void

  constructor(
    private readonly db: Database.Database,
    private readonly writer: SqliteWriter | null = null,
    /** The version from the file's WAL index; without it, from PRAGMA data_version. */
    private readonly walIndex: WalIndexVersion | null = null,
    /** The hot path's reads by id; without it, they run on the main connection. */
    private readonly reader: SnapshotReader | null = null,
    private readonly idempotencyCap = new IdempotencyCap(DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
    /** The file as opened; null in memory. */
    private readonly file: DatabaseFile | null = null,
  ) {
    if (file !== null) this.fileCheck = setInterval(() => this.checkFile(), FILE_CHECK_MS).unref()
    this.probeHere = writeProbe(db)
    this.statements = {
      firstPage: db
        .prepare<[number], PetRow>(
          'SELECT id, name, category_id, status FROM pets ORDER BY id LIMIT ?',
        )
        .raw(true),
      pageAfter: db
        .prepare<[bigint, number], PetRow>(
          'SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?',
        )
        .raw(true),
      firstPageByStatus: db
        .prepare<[string, number], PetRow>(
          'SELECT id, name, category_id, status FROM pets WHERE status = ? ORDER BY id LIMIT ?',
        )
        .raw(true),
      pageAfterByStatus: db
        .prepare<[string, bigint, number], PetRow>(
          'SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?',
        )
        .raw(true),
      getPet: db.prepare<[bigint], PetRow>(PET_BY_ID).raw(true),
      getPetJson: db.prepare<[bigint], string>(PET_JSON_BY_ID).pluck(),
      findIdempotency: db.prepare<[string, string], IdempotencyRow>(
        'SELECT request_hash, pet_id, created_at, locked_until FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?',
      ),
      upsertIdempotency: db.prepare<[string, string, string, number, number]>(
        `INSERT INTO idempotency_keys (api_key_id, idempotency_key, request_hash, pet_id, created_at, locked_until)
         VALUES (?, ?, ?, NULL, ?, ?)
         ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
           request_hash = excluded.request_hash, pet_id = NULL,
           created_at = excluded.created_at, locked_until = excluded.locked_until`,
      ),
      releaseIdempotency: db.prepare<[string, string]>(
        'DELETE FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ? AND pet_id IS NULL',
      ),
      deleteIdempotencyBefore: db.prepare<[number]>(
        'DELETE FROM idempotency_keys WHERE created_at < ?',
      ),
      countIdempotencyOfApiKey: db
        .prepare<[string], bigint>('SELECT count(*) FROM idempotency_keys WHERE api_key_id = ?')
        .pluck(),
      deleteOldestCompletedIdempotency: db.prepare<[string, number]>(
        `DELETE FROM idempotency_keys WHERE rowid IN (
           SELECT rowid FROM idempotency_keys WHERE api_key_id = ? AND pet_id IS NOT NULL
           ORDER BY created_at, idempotency_key LIMIT ?)`,
      ),
      insertApiKey: db.prepare<[string, string, Buffer, number, number | null, number | null]>(
        'INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      findApiKey: db.prepare<[string], ApiKeyRow>(
        `SELECT ${keyLookupColumns('zeroblob(32)')}
         FROM (SELECT ? AS wanted) AS w LEFT JOIN api_keys AS k ON k.id = w.wanted`,
      ),
      listApiKeys: db.prepare<[], ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id'),
      revokeApiKey: db.prepare<[number, string]>(
        'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
      ),
      countApiKeys: db.prepare<[], { n: bigint }>('SELECT count(*) AS n FROM api_keys'),
      ping: db.prepare<[], { ok: bigint }>('SELECT 1 AS ok'),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck().safeIntegers(false),
    }
    // Creates are group-committed: those that arrive while a batch is being synced go together in
    // the next one. On the writer thread the event loop goes on serving while a batch syncs.
    const commitHere = writer === null ? createTransaction(db) : null
    this.creates = new AsyncWriteBatcher(async (items) => {
      let ids: ArrayLike<bigint>
      try {
        this.throwIfFileFault()
        // The writer thread checks the file after each commit: no pet is acknowledged that a
        // restart would not find.
        ids = commitHere ? commitHere(items) : await writer!.commit(items)
        if (commitHere) this.ownCommits++
      } catch (err) {
        throw this.failed(err)
      }
      this.lastFailure = null
      return items.map(({ pet }, i) => ({ id: ids[i]!, ...pet }))
    })
    const insertAll = db.transaction(petInserter(db))
    this.bulkInsert = (pets, createdAt) => insertAll.immediate(pets, createdAt)
  }

  async listPets({ afterId, status, limit }: PetPageQuery): Promise<Pet[]> {
    const s = this.statements
    const rows = this.guarded(() => {
      if (status === null) {
        return afterId === null ? s.firstPage.all(limit) : s.pageAfter.all(afterId, limit)
      }
      return afterId === null
        ? s.firstPageByStatus.all(status, limit)
        : s.pageAfterByStatus.all(status, afterId, limit)
    })
    return rows.map(toPet)
  }

  async getPet(id: bigint): Promise<Pet | null> {
    const row = this.guarded(() => this.statements.getPet.get(id))
    return row ? toPet(row) : null
  }

  /** Null while the file is gone: the caller then takes getPet's way, which reports it. */
  getPetJsonAt(id: bigint, version: number): string | null {
    if (this.fileFault !== null) return null
    const json = this.reader ? this.reader.petJson(id, version) : this.statements.getPetJson.get(id)
    return json ?? null
  }

  createPet(pet: NewPet, completes?: IdempotencyRef): Promise<Pet> {
    if (this.closed) return Promise.reject(new Error('store is closed'))
    return this.creates.submit({ pet, completes })
  }

  createPetThen(pet: NewPet, created: (pet: Pet) => void, failed: (err: unknown) => void): void {
    if (this.closed) failed(new Error('store is closed'))
    else this.creates.submitThen({ pet, completes: undefined }, created, failed)
  }

  async insertPets(pets: NewPet[]): Promise<void> {
    if (this.closed) throw new Error('store is closed')
    // Creates queued before this call get their ids first, as they would with any other order.
    await this.creates.idle()
    // One transaction, so one WAL sync (synchronous=FULL) makes the whole batch durable at once.
    this.guarded(() => this.bulkInsert(pets, Date.now()))
    this.ownCommits++
  }

  async claimIdempotencyKey(req: IdempotencyClaimRequest): Promise<IdempotencyClaim> {
    const now = req.now.getTime()
    const claim = this.db.transaction((): IdempotencyClaim => {
      const row = this.statements.findIdempotency.get(req.apiKeyId, req.key)
      const decided = decideIdempotencyClaim(row, req)
      if (decided.outcome !== 'claimed') return decided
      this.statements.upsertIdempotency.run(
        req.apiKeyId,
        req.key,
        req.requestHash,
        now,
        now + req.leaseMs,
      )
      if (this.idempotencyCap.claimed(req.apiKeyId)) this.trimIdempotencyKeys(req.apiKeyId)
      return { outcome: 'claimed' }
    })
    const outcome = this.guarded(() => claim.immediate())
    this.ownCommits++
    return outcome
  }

  /** Drops the API key's oldest completed records past the cap (IdempotencyCap). */
  private trimIdempotencyKeys(apiKeyId: string): void {
    const count = Number(this.statements.countIdempotencyOfApiKey.get(apiKeyId))
    const excess = this.idempotencyCap.excess(count)
    const { changes } =
      excess > 0
        ? this.statements.deleteOldestCompletedIdempotency.run(apiKeyId, excess)
        : { changes: 0 }
    this.idempotencyCap.counted(apiKeyId, count - changes)
  }

  async releaseIdempotencyKey(ref: IdempotencyRef): Promise<void> {
    this.guarded(() => this.statements.releaseIdempotency.run(ref.apiKeyId, ref.key))
    this.ownCommits++
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    const { changes } = this.guarded(() =>
      this.statements.deleteIdempotencyBefore.run(cutoff.getTime()),
    )
    this.ownCommits++
    return changes
  }

  async insertApiKey(k: ApiKeyRecord): Promise<void> {
    this.guarded(() => this.statements.insertApiKey.run(...apiKeyValues(k)))
    this.ownCommits++
  }

  async findApiKey(id: string): Promise<ApiKeyRecord | null> {
    return this.findApiKeyNow(id)
  }

  findApiKeyNow(id: string): ApiKeyRecord | null {
    return foundApiKey(this.guarded(() => this.statements.findApiKey.get(id)))
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return this.guarded(() => this.statements.listApiKeys.all()).map(toApiKey)
  }

  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    const { changes } = this.guarded(() => this.statements.revokeApiKey.run(at.getTime(), id))
    this.ownCommits++
    return changes > 0
  }

  async countApiKeys(): Promise<number> {
    return Number(this.guarded(() => this.statements.countApiKeys.get())!.n)
  }

  /**
   * Moves whenever anyone commits: this connection, the writer thread, another process such as
   * `petstore keys revoke`. Read from the file's WAL index when there is one (wal-index-version.ts,
   * one pread); otherwise SQLite's data_version, which moves with other connections' commits,
   * plus this connection's own commits counted beside it.
   */
  dataVersion(): DataVersion {
    // Throwing makes callers use nothing cached, so nothing is served from a file that is gone.
    this.throwIfFileFault()
    const version =
      this.walIndex !== null
        ? this.walIndex.current()
        : this.statements.dataVersion.get()! + this.ownCommits
    // SQLite tells of a commit, not of what it changed: both move together.
    return { pets: version, keys: version }
  }

  /**
   * Fails while the path does not name the opened file, and while the disk or file fails: after a
   * failure, only a write that succeeds (faults.ts writeProbe, on the writer's connection) shows
   * that it is over. Otherwise a read that touches no file, so that readiness costs nothing.
   */
  async ping(): Promise<void> {
    const fault = this.checkFile()
    if (fault !== null) throw fault
    try {
      if (this.lastFailure === null) this.statements.ping.get()
      else if (this.writer !== null) await this.writer.probe()
      else this.probeHere()
    } catch (err) {
      throw this.failed(err)
    }
    this.lastFailure = null
  }

  private throwIfFileFault(): void {
    if (this.fileFault !== null) throw this.fileFault
  }

  /** Compares the path with the opened file now; the fault, if any, holds until it matches again. */
  private checkFile(): StorageUnavailableError | null {
    if (this.file !== null) this.fileFault = this.file.check()
    return this.fileFault
  }

  /** A fault of the disk or file as StorageUnavailableError, remembered for readiness. */
  private failed(err: unknown): unknown {
    const mapped = unavailableOr(err)
    if (!(mapped instanceof StorageUnavailableError) || mapped === this.fileFault) return mapped
    // The writer thread found the file gone: reads stop now rather than at the next check.
    if ((err as { code?: unknown }).code === FILE_REPLACED) this.checkFile()
    else this.lastFailure = mapped
    return mapped
  }

  /** Runs `work` on the main connection, unless the file is gone; maps its faults. */
  private guarded<T>(work: () => T): T {
    try {
      this.throwIfFileFault()
      return work()
    } catch (err) {
      throw this.failed(err)
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.fileCheck !== null) clearInterval(this.fileCheck)
    await this.creates.idle()
    await this.writer?.close()
    this.reader?.close()
    this.walIndex?.close()
    this.db.close()
    this.file?.removeCompanionsIfMoved()
  }

  /**
   * The main connection, the snapshot reader's, and the writer thread's once the first create
   * started it.
   */
  stats(): StoreStats {
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
