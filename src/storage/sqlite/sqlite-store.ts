import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { type ApiKeyRow, toApiKey } from '../api-key-row.js'
import type {
  ApiKeyRecord,
  IdempotencyClaim,
  IdempotencyClaimRequest,
  IdempotencyRef,
  NewPet,
  Pet,
  PetPageQuery,
  PetStatus,
  Store,
  StoreStats,
} from '../store.js'
import { WriteBatcher } from '../write-batcher.js'
import { migrateSqlite } from './migrate.js'

/** A pets row as an array (`id, name, category_id, status`): the statements run in raw mode. */
type PetRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

interface IdempotencyRow {
  request_hash: string
  pet_id: bigint | null
  created_at: bigint
  locked_until: bigint | null
}

interface CreateItem {
  pet: NewPet
  completes: IdempotencyRef | undefined
}

// Rows come as arrays rather than objects: better-sqlite3 builds a row object property by
// property, which was the largest single cost of a list request in the CPU profile.
const toPet = (row: PetRow): Pet => {
  const status = row[3]
  return status === null
    ? { id: row[0], name: row[1], categoryId: row[2] }
    : { id: row[0], name: row[1], categoryId: row[2], status }
}

function openDatabase(path: string): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path)
  // First, so that switching a new file to WAL waits for another process doing the same.
  db.pragma('busy_timeout = 5000')
  // WAL with synchronous=FULL syncs the log on every commit: a committed pet survives a crash of
  // the process and of the machine. NORMAL would survive only the former.
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  return db
}

export async function openSqliteStore(path: string): Promise<SqliteStore> {
  const db = openDatabase(path)
  try {
    await migrateSqlite(db)
  } catch (err) {
    db.close()
    throw err
  }
  return new SqliteStore(db)
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite'
  private readonly statements
  private readonly creates: WriteBatcher<CreateItem, Pet>
  private readonly bulkInsert: (pets: NewPet[], createdAt: number) => void
  private closed = false

  constructor(private readonly db: Database.Database) {
    db.defaultSafeIntegers(true)
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
      getPet: db
        .prepare<[bigint], PetRow>('SELECT id, name, category_id, status FROM pets WHERE id = ?')
        .raw(true),
      insertPet: db.prepare<[string, bigint, string | null, number], { id: bigint }>(
        'INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?) RETURNING id',
      ),
      bulkInsertPet: db.prepare<[string, bigint, string | null, number]>(
        'INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)',
      ),
      completeIdempotency: db.prepare<[bigint, string, string]>(
        'UPDATE idempotency_keys SET pet_id = ?, locked_until = NULL WHERE api_key_id = ? AND idempotency_key = ?',
      ),
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
      insertApiKey: db.prepare<[string, string, Buffer, number, number | null, number | null]>(
        'INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      findApiKey: db.prepare<[string], ApiKeyRow>('SELECT * FROM api_keys WHERE id = ?'),
      listApiKeys: db.prepare<[], ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id'),
      revokeApiKey: db.prepare<[number, string]>(
        'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
      ),
      countApiKeys: db.prepare<[], { n: bigint }>('SELECT count(*) AS n FROM api_keys'),
      ping: db.prepare<[], { ok: bigint }>('SELECT 1 AS ok'),
    }
    const commitCreates = db.transaction((items: CreateItem[]): Pet[] =>
      items.map(({ pet, completes }) => {
        const { id } = this.statements.insertPet.get(
          pet.name,
          pet.categoryId,
          pet.status ?? null,
          Date.now(),
        )!
        if (completes) {
          this.statements.completeIdempotency.run(id, completes.apiKeyId, completes.key)
        }
        return { id, ...pet }
      }),
    )
    this.creates = new WriteBatcher((items) => commitCreates.immediate(items))
    const insertAll = db.transaction((pets: NewPet[], createdAt: number) => {
      const insert = this.statements.bulkInsertPet
      for (const pet of pets) insert.run(pet.name, pet.categoryId, pet.status ?? null, createdAt)
    })
    this.bulkInsert = (pets, createdAt) => insertAll.immediate(pets, createdAt)
  }

  async listPets({ afterId, status, limit }: PetPageQuery): Promise<Pet[]> {
    const s = this.statements
    let rows: PetRow[]
    if (status === null) {
      rows = afterId === null ? s.firstPage.all(limit) : s.pageAfter.all(afterId, limit)
    } else {
      rows =
        afterId === null
          ? s.firstPageByStatus.all(status, limit)
          : s.pageAfterByStatus.all(status, afterId, limit)
    }
    return rows.map(toPet)
  }

  async getPet(id: bigint): Promise<Pet | null> {
    const row = this.statements.getPet.get(id)
    return row ? toPet(row) : null
  }

  createPet(pet: NewPet, completes?: IdempotencyRef): Promise<Pet> {
    if (this.closed) return Promise.reject(new Error('store is closed'))
    return this.creates.submit({ pet, completes })
  }

  async insertPets(pets: NewPet[]): Promise<void> {
    if (this.closed) throw new Error('store is closed')
    // Creates queued before this call get their ids first, as they would with any other order.
    this.creates.flush()
    // One transaction, so one WAL sync (synchronous=FULL) makes the whole batch durable at once.
    this.bulkInsert(pets, Date.now())
  }

  async claimIdempotencyKey(req: IdempotencyClaimRequest): Promise<IdempotencyClaim> {
    const now = req.now.getTime()
    const claim = this.db.transaction((): IdempotencyClaim => {
      const row = this.statements.findIdempotency.get(req.apiKeyId, req.key)
      const live = row !== undefined && Number(row.created_at) + req.retentionMs > now
      if (row && live) {
        if (row.request_hash !== req.requestHash) return { outcome: 'mismatch' }
        if (row.pet_id !== null) return { outcome: 'completed', petId: row.pet_id }
        if (row.locked_until !== null && Number(row.locked_until) > now) {
          return { outcome: 'in_progress' }
        }
      }
      this.statements.upsertIdempotency.run(
        req.apiKeyId,
        req.key,
        req.requestHash,
        now,
        now + req.leaseMs,
      )
      return { outcome: 'claimed' }
    })
    return claim.immediate()
  }

  async releaseIdempotencyKey(ref: IdempotencyRef): Promise<void> {
    this.statements.releaseIdempotency.run(ref.apiKeyId, ref.key)
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    return this.statements.deleteIdempotencyBefore.run(cutoff.getTime()).changes
  }

  async insertApiKey(k: ApiKeyRecord): Promise<void> {
    this.statements.insertApiKey.run(
      k.id,
      k.name,
      k.secretHash,
      k.createdAt.getTime(),
      k.expiresAt?.getTime() ?? null,
      k.revokedAt?.getTime() ?? null,
    )
  }

  async findApiKey(id: string): Promise<ApiKeyRecord | null> {
    const row = this.statements.findApiKey.get(id)
    return row ? toApiKey(row) : null
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return this.statements.listApiKeys.all().map(toApiKey)
  }

  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    return this.statements.revokeApiKey.run(at.getTime(), id).changes > 0
  }

  async countApiKeys(): Promise<number> {
    return Number(this.statements.countApiKeys.get()!.n)
  }

  async ping(): Promise<void> {
    this.statements.ping.get()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.creates.flush()
    this.db.close()
  }

  /** One connection, held for the store's lifetime; nothing ever waits for it (calls are sync). */
  stats(): StoreStats {
    return {
      connections: { inUse: this.closed ? 0 : 1, idle: 0, waiting: 0 },
      queuedWrites: this.creates.queued,
    }
  }

  onWriteBatch(listener: (size: number) => void): void {
    this.creates.onCommit(listener)
  }
}
