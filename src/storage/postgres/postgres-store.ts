// The PostgreSQL adapter: several service processes share one database through it.
import {
  type ApiKeyRow,
  apiKeyValues,
  foundApiKey,
  keyLookupSql,
  toApiKey,
} from '../api-key-row.js'
import { AsyncWriteBatcher } from '../async-write-batcher.js'
import type { CreateItem } from '../create-item.js'
import { type Deadline, earliest } from '../deadline.js'
import { ClaimReleasedError } from '../errors.js'
import { DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY, IdempotencyCap } from '../idempotency-cap.js'
import type * as domain from '../store.js'
import { claimIdempotencyKey } from './idempotency.js'
import { preparePostgres } from './migrate.js'
import { newPool, type PostgresOptions, Statements, serverMilliseconds } from './pool.js'

interface PetRow {
  id: bigint
  name: string
  category_id: bigint
  status: domain.PetStatus | null
}

const toPet = (row: PetRow): domain.Pet => {
  const pet: domain.Pet = { id: row.id, name: row.name, categoryId: row.category_id }
  if (row.status !== null) pet.status = row.status
  return pet
}

type VersionRow = { pets: bigint; api_keys: bigint }

const SELECT_PET = 'SELECT id, name, category_id, status FROM pets'
const FIRST_ID = -(2n ** 63n)
const FIND_API_KEY = keyLookupSql(`'\\x${'00'.repeat(32)}'::bytea`, '$1::text')

export async function openPostgresStore(opts: PostgresOptions): Promise<PostgresStore> {
  const { pooled } = await preparePostgres(opts)
  return new PostgresStore(opts, pooled)
}

export class PostgresStore implements domain.Store {
  readonly kind = 'postgres'
  private readonly db: Statements
  private readonly cap: IdempotencyCap
  private readonly creates = new AsyncWriteBatcher<CreateItem, domain.Pet>((items) =>
    this.commit(items),
  )
  /** The data version read not yet sent, and the deadlines of those who will share it. */
  private nextRead: { version: Promise<domain.DataVersion>; deadlines: Deadline[] } | null = null
  private lastRead: Promise<unknown> = Promise.resolve()
  private closed = false

  /** `pooled`: a pooler answers for the server (preparePostgres). */
  constructor(opts: PostgresOptions, pooled: boolean) {
    const pool = newPool(opts, opts.poolSize, opts.onPoolError)
    // Named statements save the server a parse and a plan each time (docs/scaling.md), but live
    // on one server connection, which a pooler shares out by transaction.
    this.db = new Statements(pool, opts.timeoutMs, !pooled)
    this.cap = new IdempotencyCap(
      opts.idempotencyKeysPerApiKey ?? DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY,
    )
  }

  async listPets(query: domain.PetPageQuery, deadline?: Deadline): Promise<domain.Pet[]> {
    const { afterId, status, limit } = query
    const after = afterId ?? FIRST_ID
    // Two statements rather than `status = $x OR $x IS NULL`, so each keeps its own index plan.
    const [name, text, values] =
      status === null
        ? ['list-pets', `${SELECT_PET} WHERE id > $1 ORDER BY id LIMIT $2`, [after, limit]]
        : [
            'list-pets-by-status',
            `${SELECT_PET} WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
            [status, after, limit],
          ]
    return (await this.db.query<PetRow>(name, text, values, deadline)).rows.map(toPet)
  }

  async getPet(id: bigint, deadline?: Deadline): Promise<domain.Pet | null> {
    const text = `${SELECT_PET} WHERE id = $1`
    const { rows } = await this.db.query<PetRow>('get-pet', text, [id], deadline)
    return rows[0] ? toPet(rows[0]) : null
  }

  createPet(
    pet: domain.NewPet,
    completes?: domain.IdempotencyClaimRef,
    deadline?: Deadline,
  ): Promise<domain.Pet> {
    if (this.closed) return Promise.reject(new Error('store is closed'))
    return this.creates.submit({ pet, completes, deadline })
  }

  async insertPets(pets: domain.NewPet[]): Promise<void> {
    if (this.closed) throw new Error('store is closed')
    if (pets.length > 0) await this.commit(pets.map((pet) => ({ pet, completes: undefined })))
  }

  /**
   * A batch of creates in one statement, so one round trip, bounded by its earliest deadline:
   * insert_pets (migration 005) with the claims they complete, the longest wait for a lock, and
   * the time after which the server gives up rather than commit. The server decides before its
   * caller stops waiting, so a create answered 503 is all but never committed afterwards. A create
   * whose claim is no longer held gets no id: ClaimReleasedError in its place.
   */
  private async commit(items: CreateItem[]): Promise<(domain.Pet | Error)[]> {
    const deadline = earliest(items.map((i) => i.deadline))
    const serverMs = serverMilliseconds(this.db.budget(deadline) * 0.9)
    const claims = items.map((i) => i.completes)
    const { rows } = await this.db.query<{ id: bigint | null }>(
      'insert-pets',
      'SELECT id FROM insert_pets($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      [
        items.map((i) => i.pet.name),
        items.map((i) => i.pet.categoryId),
        items.map((i) => i.pet.status ?? null),
        Date.now(),
        claims.map((c) => c?.apiKeyId ?? null),
        claims.map((c) => c?.key ?? null),
        claims.map((c) => c?.token ?? null),
        serverMs,
        serverMs,
      ],
      deadline,
    )
    return items.map(({ pet }, i) => {
      const id = rows[i]!.id
      return id === null ? new ClaimReleasedError() : { id, ...pet }
    })
  }

  claimIdempotencyKey(req: domain.IdempotencyClaimRequest): Promise<domain.IdempotencyClaim> {
    return claimIdempotencyKey(this.db, this.cap, req)
  }

  /** Waits for the commit of a create that holds the claim's lock (insert_pets locks it first). */
  async releaseIdempotencyKey(ref: domain.IdempotencyClaimRef, deadline?: Deadline): Promise<void> {
    const text = `DELETE FROM idempotency_keys
       WHERE api_key_id = $1 AND idempotency_key = $2 AND pet_id IS NULL AND claim_token = $3`
    const values = [ref.apiKeyId, ref.key, ref.token]
    await this.db.query('release-idempotency-claim', text, values, deadline)
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    const text = 'DELETE FROM idempotency_keys WHERE created_at < $1'
    return (await this.db.query('purge-idempotency', text, [cutoff.getTime()])).rowCount ?? 0
  }

  async insertApiKey(k: domain.ApiKeyRecord): Promise<void> {
    const text = `INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6)`
    await this.db.query('insert-api-key', text, [...apiKeyValues(k)])
  }

  async findApiKey(id: string, deadline?: Deadline): Promise<domain.ApiKeyRecord | null> {
    const { rows } = await this.db.query<ApiKeyRow>('find-api-key', FIND_API_KEY, [id], deadline)
    return foundApiKey(rows[0])
  }

  async listApiKeys(): Promise<domain.ApiKeyRecord[]> {
    const text = 'SELECT * FROM api_keys ORDER BY created_at, id'
    const { rows } = await this.db.query<ApiKeyRow>('list-api-keys', text, [])
    return rows.map(toApiKey)
  }

  async revokeApiKey(id: string, at: Date): Promise<boolean> {
    const text = 'UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL'
    return (await this.db.query('revoke-api-key', text, [at.getTime(), id])).rowCount === 1
  }

  async countApiKeys(): Promise<number> {
    const text = 'SELECT count(*) AS n FROM api_keys'
    const { rows } = await this.db.query<{ n: bigint }>('count-api-keys', text, [])
    return Number(rows[0]!.n)
  }

  /**
   * The data_version row (migration 002). One read is in flight at a time; callers arriving
   * meanwhile share the next, sent after all of them asked, so it sees every commit acknowledged
   * before any of them did. It is bounded by their earliest deadline: none waits past its own.
   */
  dataVersion(deadline?: Deadline): Promise<domain.DataVersion> {
    if (this.nextRead === null) {
      const deadlines: Deadline[] = []
      const version = this.lastRead.then(async () => {
        this.nextRead = null
        const text = 'SELECT pets, api_keys FROM data_version'
        const by = earliest(deadlines)
        const { rows } = await this.db.query<VersionRow>('data-version', text, [], by)
        return { pets: Number(rows[0]!.pets), keys: Number(rows[0]!.api_keys) }
      })
      this.nextRead = { version, deadlines }
      this.lastRead = version.catch(() => undefined)
    }
    if (deadline !== undefined) this.nextRead.deadlines.push(deadline)
    return this.nextRead.version
  }

  async ping(): Promise<void> {
    await this.db.query('ping', 'SELECT 1', [])
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.creates.idle()
    await this.db.pool.end()
  }

  stats(): domain.StoreStats {
    const { totalCount, idleCount, waitingCount } = this.db.pool
    return {
      connections: { inUse: totalCount - idleCount, idle: idleCount, waiting: waitingCount },
      queuedWrites: this.creates.queued,
    }
  }

  onWriteBatch(listener: (size: number) => void): void {
    this.creates.onCommit(listener)
  }
}
