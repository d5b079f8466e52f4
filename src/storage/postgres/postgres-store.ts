// The PostgreSQL adapter: several service processes share one database through it.
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import {
  type ApiKeyRow,
  apiKeyValues,
  foundApiKey,
  keyLookupColumns,
  toApiKey,
} from '../api-key-row.js'
import { AsyncWriteBatcher } from '../async-write-batcher.js'
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
  PetStatus,
  Store,
  StoreStats,
} from '../store.js'
import { postgresMigrations } from './migrations.js'
import { unavailability, unavailableOr, unavailableToConnect } from './unavailability.js'

export interface PostgresOptions {
  url: string
  poolSize: number
  /** Bound on connecting and on each statement: past it, the request fails with 503. */
  timeoutMs: number
  onPoolError?: (err: Error) => void
  /** Idempotency records kept per API key (IdempotencyCap). */
  idempotencyKeysPerApiKey?: number
}

interface PetRow {
  id: bigint
  name: string
  category_id: bigint
  status: PetStatus | null
}

interface CreateItem {
  pet: NewPet
  completes: IdempotencyRef | undefined
}

const INT8_OID = 20
const typeParsers = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (v: string) => BigInt(v) : pg.types.getTypeParser(oid, format)) as never,
}

const toPet = (row: PetRow): Pet => {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id }
  if (row.status !== null) pet.status = row.status
  return pet
}

function poolConfig(opts: PostgresOptions, max: number): pg.PoolConfig {
  return {
    connectionString: opts.url,
    max,
    connectionTimeoutMillis: opts.timeoutMs,
    query_timeout: opts.timeoutMs,
    statement_timeout: opts.timeoutMs,
    // A transaction whose client vanished (a partition: the server never hears the connection
    // close) would otherwise keep its locks, the insert lock among them, for as long as TCP takes
    // to notice, hours: every instance's creates would wait on it. The server ends it instead.
    idle_in_transaction_session_timeout: opts.timeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    types: typeParsers,
  }
}

/**
 * A lost connection fails the statement in flight, which reports it; but the client also emits it
 * as an event, and an event nobody listens to ends the process. The pool listens only while a
 * client is idle in it, so each client gets a listener of its own for while it is checked out.
 */
function survivingLostConnections(pool: pg.Pool): pg.Pool {
  pool.on('connect', (client) => client.on('error', () => undefined))
  return pool
}

/** Said plainly, so that a start failing because of the database's state says so. */
function stateOfDatabase(opts: PostgresOptions, state: string, err: unknown): Error {
  const { hostname, port } = new URL(opts.url)
  return new Error(
    `PostgreSQL at ${hostname}:${port || 5432} ${state} (${(err as Error).message})`,
    { cause: err },
  )
}

export async function migratePostgres(opts: PostgresOptions): Promise<string[]> {
  // Kysely ends the pool it was given when destroyed: the migration gets its own.
  const pool = survivingLostConnections(new pg.Pool(poolConfig(opts, 1)))
  pool.on('error', () => undefined)
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) })
  try {
    // Kysely looks for its own tables in every schema unless told which one: name the schema the
    // connection works in, so databases with several schemas (one per tenant or test) stay apart.
    const { rows } = await sql<{ schema: string }>`SELECT current_schema() AS schema`
      .execute(db)
      .catch((err: unknown) => {
        throw unavailability(err) === null ? err : stateOfDatabase(opts, 'is not reachable', err)
      })
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => postgresMigrations },
      migrationTableSchema: rows[0]!.schema,
    })
    const result = await migrator.migrateToLatest()
    // Only a refusal to write is reworded here: Kysely's own errors (a missing migration) are
    // plain Errors, which unavailability cannot tell from a lost connection.
    if (unavailability(result.error) === 'read-only') {
      throw stateOfDatabase(opts, 'is read-only: its schema cannot be migrated', result.error)
    }
    if (result.error) throw result.error
    return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
  } finally {
    await db.destroy()
  }
}

export async function openPostgresStore(opts: PostgresOptions): Promise<PostgresStore> {
  await migratePostgres(opts)
  return new PostgresStore(
    new pg.Pool(poolConfig(opts, opts.poolSize)),
    opts.onPoolError,
    new IdempotencyCap(opts.idempotencyKeysPerApiKey ?? DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
  )
}

const SELECT_PET = 'SELECT id, name, category_id, status FROM pets'

export class PostgresStore implements Store {
  readonly kind = 'postgres'
  private readonly creates: AsyncWriteBatcher<CreateItem, Pet>
  private closed = false
  /** Callers of dataVersion waiting for the next read of it (see readVersions). */
  private versionWaiters: {
    resolve: (version: DataVersion) => void
    reject: (e: unknown) => void
  }[] = []
  private readingVersion = false

  constructor(
    private readonly pool: pg.Pool,
    onPoolError: (err: Error) => void = () => undefined,
    private readonly idempotencyCap = new IdempotencyCap(DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
  ) {
    // An idle client whose server went away emits here; unhandled, it would end the process.
    pool.on('error', onPoolError)
    survivingLostConnections(pool)
    this.creates = new AsyncWriteBatcher((items) => this.commitCreates(items))
  }

  /** A pooled connection; any failure to get one is unavailability (unavailableToConnect). */
  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect()
    } catch (err) {
      throw unavailableToConnect(err)
    }
  }

  /** One statement on a pooled connection (pool.query, with connect's classification). */
  private async run<R extends pg.QueryResultRow>(
    config: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    const client = await this.connect()
    try {
      const result = await client.query<R>(config)
      client.release()
      return result
    } catch (err) {
      // As pool.query does: a connection whose statement failed is not reused. One that refused a
      // write (a primary demoted behind a proxy) would refuse every later one too.
      client.release(err as Error)
      throw unavailableOr(err)
    }
  }

  private async query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<R[]> {
    return (await this.run<R>({ name, text, values })).rows
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect()
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      client.release()
      return result
    } catch (err) {
      // A client that failed mid-transaction may be broken: destroy it rather than reuse it.
      await client.query('ROLLBACK').catch(() => undefined)
      client.release(true)
      throw unavailableOr(err)
    }
  }

  /** One statement, so one round trip, for the whole batch: insert_pets (migration 003). */
  private async commitCreates(items: CreateItem[]): Promise<Pet[]> {
    const { rows } = await this.run<{ id: bigint }>({
      name: 'insert-pets',
      text: 'SELECT id FROM insert_pets($1, $2, $3, $4, $5, $6)',
      values: [
        items.map((i) => i.pet.name),
        items.map((i) => i.pet.categoryId),
        items.map((i) => i.pet.status ?? null),
        Date.now(),
        items.map((i) => i.completes?.apiKeyId ?? null),
        items.map((i) => i.completes?.key ?? null),
      ],
    })
    return items.map(({ pet }, i) => ({ id: rows[i]!.id, ...pet }))
  }

  async listPets({ afterId, status, limit }: PetPageQuery): Promise<Pet[]> {
    const after = afterId ?? -(2n ** 63n)
    // Two statements rather than `status = $x OR $x IS NULL`, so each keeps its own index plan.
    const rows =
      status === null
        ? await this.query<PetRow>(
            'list-pets',
            `${SELECT_PET} WHERE id > $1 ORDER BY id LIMIT $2`,
            [after, limit],
          )
        : await this.query<PetRow>(
            'list-pets-by-status',
            `${SELECT_PET} WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
            [status, after, limit],
          )
    return rows.map(toPet)
  }

  async getPet(id: bigint): Promise<Pet | null> {
    const [row] = await this.query<PetRow>('get-pet', `${SELECT_PET} WHERE id = $1`, [id])
    return row ? toPet(row) : null
  }

  createPet(pet: NewPet, completes?: IdempotencyRef): Promise<Pet> {
    if (this.closed) return Promise.reject(new Error('store is closed'))
    return this.creates.submit({ pet, completes })
  }

  async insertPets(pets: NewPet[]): Promise<void> {
    if (this.closed) throw new Error('store is closed')
    if (pets.length === 0) return
    const none = pets.map(() => null)
    await this.run({
      text: 'SELECT count(*) FROM insert_pets($1, $2, $3, $4, $5, $6)',
      values: [
        pets.map((p) => p.name),
        pets.map((p) => p.categoryId),
        pets.map((p) => p.status ?? null),
        Date.now(),
        none,
        none,
      ],
    })
  }

  async claimIdempotencyKey(req: IdempotencyClaimRequest): Promise<IdempotencyClaim> {
    const now = req.now.getTime()
    return this.transaction(async (client) => {
      // No row yet: claimed, as decideIdempotencyClaim has it, in one statement that concurrent
      // claims of the same new key cannot both pass.
      const inserted = await client.query(
        `INSERT INTO idempotency_keys
           (api_key_id, idempotency_key, request_hash, pet_id, created_at, locked_until)
         VALUES ($1, $2, $3, NULL, $4, $5)
         ON CONFLICT (api_key_id, idempotency_key) DO NOTHING`,
        [req.apiKeyId, req.key, req.requestHash, now, now + req.leaseMs],
      )
      if (inserted.rowCount === 1) return this.claimed(client, req.apiKeyId)
      // The row exists: lock it, so concurrent claims through other instances decide one by one.
      const { rows } = await client.query<IdempotencyRow>(
        `SELECT request_hash, pet_id, created_at, locked_until FROM idempotency_keys
         WHERE api_key_id = $1 AND idempotency_key = $2 FOR UPDATE`,
        [req.apiKeyId, req.key],
      )
      // No row: purged or released between the two statements, so the key is free to take.
      const decided = decideIdempotencyClaim(rows[0], req)
      if (decided.outcome !== 'claimed') return decided
      await client.query(
        `INSERT INTO idempotency_keys
           (api_key_id, idempotency_key, request_hash, pet_id, created_at, locked_until)
         VALUES ($1, $2, $3, NULL, $4, $5)
         ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
           request_hash = excluded.request_hash, pet_id = NULL,
           created_at = excluded.created_at, locked_until = excluded.locked_until`,
        [req.apiKeyId, req.key, req.requestHash, now, now + req.leaseMs],
      )
      return this.claimed(client, req.apiKeyId)
    })
  }

  /**
   * A claim taken: when due, the API key's oldest completed records past the cap go in the same
   * transaction (IdempotencyCap). Rows another transaction holds are skipped, not waited for, so
   * two instances trimming one key at once cannot deadlock; the next count catches up.
   */
  private async claimed(client: pg.PoolClient, apiKeyId: string): Promise<IdempotencyClaim> {
    if (this.idempotencyCap.claimed(apiKeyId)) {
      const { rows } = await client.query<{ n: bigint }>({
        name: 'count-idempotency-of-api-key',
        text: 'SELECT count(*) AS n FROM idempotency_keys WHERE api_key_id = $1',
        values: [apiKeyId],
      })
      const count = Number(rows[0]!.n)
      const excess = this.idempotencyCap.excess(count)
      let deleted = 0
      if (excess > 0) {
        const result = await client.query({
          name: 'delete-oldest-completed-idempotency',
          // By ctid: the rows chosen are deleted where they are, with no scan of the table.
          text: `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
                   SELECT ctid FROM idempotency_keys
                   WHERE api_key_id = $1 AND pet_id IS NOT NULL
                   ORDER BY created_at, idempotency_key LIMIT $2 FOR UPDATE SKIP LOCKED))`,
          values: [apiKeyId, excess],
        })
        deleted = result.rowCount ?? 0
      }
      this.idempotencyCap.counted(apiKeyId, count - deleted)
    }
    return { outcome: 'claimed' }
  }

  async releaseIdempotencyKey(ref: IdempotencyRef): Promise<void> {
    await this.query(
      'release-idempotency',
      'DELETE FROM idempotency_keys WHERE api_key_id = $1 AND idempotency_key = $2 AND pet_id IS NULL',
      [ref.apiKeyId, ref.key],
    )
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    const result = await this.run({
      text: 'DELETE FROM idempotency_keys WHERE created_at < $1',
      values: [cutoff.getTime()],
    })
    return result.rowCount ?? 0
  }

  async insertApiKey(k: ApiKeyRecord): Promise<void> {
    await this.query(
      'insert-api-key',
      `INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [...apiKeyValues(k)],
    )
  }

  async findApiKey(id: string): Promise<ApiKeyRecord | null> {
    const [row] = await this.query<ApiKeyRow>(
      'find-api-key',
      `SELECT ${keyLookupColumns(`'\\x${'00'.repeat(32)}'::bytea`)}
       FROM (SELECT $1::text AS wanted) AS w LEFT JOIN api_keys AS k ON k.id = w.wanted`,
      [id],
    )
    return foundApiKey(row)
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    const rows = await this.query<ApiKeyRow>(
      'list-api-keys',
      'SELECT * FROM api_keys ORDER BY created_at, id',
      [],
    )
    return rows.map(toApiKey)
  }

  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    const result = await this.run({
      text: 'UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',
      values: [at.getTime(), id],
    })
    return result.rowCount === 1
  }

  async countApiKeys(): Promise<number> {
    const [row] = await this.query<{ n: bigint }>(
      'count-api-keys',
      'SELECT count(*) AS n FROM api_keys',
      [],
    )
    return Number(row!.n)
  }

  /**
   * The data_version row, which commits to pets and to api_keys move (migration 002). One read
   * is in flight at a time; callers arriving meanwhile share the next one, which is sent after
   * all of them asked and so sees every commit acknowledged before any of them did.
   */
  dataVersion(): Promise<DataVersion> {
    return new Promise((resolve, reject) => {
      this.versionWaiters.push({ resolve, reject })
      if (!this.readingVersion) void this.readVersions()
    })
  }

  private async readVersions(): Promise<void> {
    this.readingVersion = true
    while (this.versionWaiters.length > 0) {
      const waiting = this.versionWaiters
      this.versionWaiters = []
      try {
        const [row] = await this.query<{ pets: bigint; api_keys: bigint }>(
          'data-version',
          'SELECT pets, api_keys FROM data_version',
          [],
        )
        const version = { pets: Number(row!.pets), keys: Number(row!.api_keys) }
        for (const w of waiting) w.resolve(version)
      } catch (err) {
        for (const w of waiting) w.reject(err)
      }
    }
    this.readingVersion = false
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1', [])
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.creates.idle()
    await this.pool.end()
  }

  stats(): StoreStats {
    return {
      connections: {
        inUse: this.pool.totalCount - this.pool.idleCount,
        idle: this.pool.idleCount,
        waiting: this.pool.waitingCount,
      },
      queuedWrites: this.creates.queued,
    }
  }

  onWriteBatch(listener: (size: number) => void): void {
    this.creates.onCommit(listener)
  }
}
