// The PostgreSQL adapter: several service processes share one database through it.
import pg from 'pg'
import { AsyncWriteBatcher } from '../async-write-batcher.js'
import type { CreateItem } from '../create-item.js'
import { DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY, IdempotencyCap } from '../idempotency-cap.js'
import type * as domain from '../store.js'
import { PostgresApiKeys } from './api-keys.js'
import { SharedVersionRead } from './data-version.js'
import { PostgresIdempotency } from './idempotency.js'
import { preparePostgres } from './migrate.js'
import { PostgresPets } from './pets.js'
import { type PostgresOptions, poolConfig, survivingLostConnections } from './pool.js'
import { PooledStatements, type StatementOptions } from './statements.js'

export { migratePostgres, preparePostgres } from './migrate.js'
export type { PostgresOptions } from './pool.js'

export async function openPostgresStore(opts: PostgresOptions): Promise<PostgresStore> {
  const { pooled } = await preparePostgres(opts)
  return new PostgresStore(
    new pg.Pool(poolConfig(opts, opts.poolSize)),
    // Named statements save the server a parse and a plan each time (docs/scaling.md), but live
    // on one server connection, which a pooler shares out by transaction.
    { timeoutMs: opts.timeoutMs, prepared: !pooled },
    opts.onPoolError,
    new IdempotencyCap(opts.idempotencyKeysPerApiKey ?? DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
  )
}

export class PostgresStore implements domain.Store {
  readonly kind = 'postgres'
  private readonly pets: PostgresPets
  private readonly idempotency: PostgresIdempotency
  private readonly apiKeys: PostgresApiKeys
  private readonly version: SharedVersionRead
  private readonly statements: PooledStatements
  private readonly creates: AsyncWriteBatcher<CreateItem, domain.Pet>
  private closed = false

  constructor(
    private readonly pool: pg.Pool,
    statementOptions: StatementOptions,
    onPoolError: (err: Error) => void = () => undefined,
    idempotencyCap = new IdempotencyCap(DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
  ) {
    // An idle client whose server went away emits here; unhandled, it would end the process.
    pool.on('error', onPoolError)
    survivingLostConnections(pool)
    this.statements = new PooledStatements(pool, statementOptions)
    this.pets = new PostgresPets(this.statements)
    this.idempotency = new PostgresIdempotency(this.statements, idempotencyCap)
    this.apiKeys = new PostgresApiKeys(this.statements)
    this.version = new SharedVersionRead(this.statements)
    this.creates = new AsyncWriteBatcher((items) => this.pets.commitCreates(items))
  }

  listPets(query: domain.PetPageQuery, deadline?: domain.Deadline): Promise<domain.Pet[]> {
    return this.pets.page(query, deadline)
  }

  getPet(id: bigint, deadline?: domain.Deadline): Promise<domain.Pet | null> {
    return this.pets.byId(id, deadline)
  }

  createPet(
    pet: domain.NewPet,
    completes?: domain.IdempotencyClaimRef,
    deadline?: domain.Deadline,
  ): Promise<domain.Pet> {
    if (this.closed) return Promise.reject(new Error('store is closed'))
    return this.creates.submit({ pet, completes, deadline })
  }

  async insertPets(pets: domain.NewPet[]): Promise<void> {
    if (this.closed) throw new Error('store is closed')
    if (pets.length === 0) return
    await this.pets.insertMany(pets)
  }

  claimIdempotencyKey(req: domain.IdempotencyClaimRequest): Promise<domain.IdempotencyClaim> {
    return this.idempotency.claim(req)
  }

  releaseIdempotencyKey(
    ref: domain.IdempotencyClaimRef,
    deadline?: domain.Deadline,
  ): Promise<void> {
    return this.idempotency.release(ref, deadline)
  }

  deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    return this.idempotency.deleteBefore(cutoff)
  }

  insertApiKey(k: domain.ApiKeyRecord): Promise<void> {
    return this.apiKeys.insert(k)
  }

  findApiKey(id: string, deadline?: domain.Deadline): Promise<domain.ApiKeyRecord | null> {
    return this.apiKeys.find(id, deadline)
  }

  listApiKeys(): Promise<domain.ApiKeyRecord[]> {
    return this.apiKeys.list()
  }

  revokeApiKey(id: string, at: Date): Promise<boolean> {
    return this.apiKeys.revoke(id, at)
  }

  countApiKeys(): Promise<number> {
    return this.apiKeys.count()
  }

  /** The data_version row, which commits to pets and to api_keys move. */
  dataVersion(deadline?: domain.Deadline): Promise<domain.DataVersion> {
    return this.version.read(deadline)
  }

  async ping(): Promise<void> {
    await this.statements.query('ping', 'SELECT 1', [])
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.creates.idle()
    await this.pool.end()
  }

  stats(): domain.StoreStats {
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
