// Reads and writes of the pets table on PostgreSQL.
import type { CreateItem } from '../create-item.js'
import { type Deadline, earliest } from '../deadline.js'
import { ClaimReleasedError } from '../errors.js'
import type { IdempotencyClaimRef, NewPet, Pet, PetPageQuery, PetStatus } from '../store.js'
import { type PooledStatements, serverMilliseconds } from './statements.js'

interface PetRow {
  id: bigint
  name: string
  category_id: bigint
  status: PetStatus | null
}

const toPet = (row: PetRow): Pet => {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id }
  if (row.status !== null) pet.status = row.status
  return pet
}

const SELECT_PET = 'SELECT id, name, category_id, status FROM pets'
const FIRST_ID = -(2n ** 63n)

/**
 * insert_pets's arguments (migration 005): the pets, the claims they complete, the longest wait
 * for a lock, and the time after which the server gives up the insert rather than commit it.
 */
function insertPetsValues(
  pets: readonly NewPet[],
  claims: readonly (IdempotencyClaimRef | undefined)[],
  serverMs: number,
): unknown[] {
  return [
    pets.map((p) => p.name),
    pets.map((p) => p.categoryId),
    pets.map((p) => p.status ?? null),
    Date.now(),
    claims.map((c) => c?.apiKeyId ?? null),
    claims.map((c) => c?.key ?? null),
    claims.map((c) => c?.token ?? null),
    serverMs,
    serverMs,
  ]
}

/**
 * The server's share of a create's time: it decides (commits or gives up) this much before its
 * caller stops waiting, so that a create answered 503 is all but never committed afterwards.
 */
const serverShare = (ms: number): number => serverMilliseconds(ms * 0.9)

const INSERT_PETS = 'SELECT id FROM insert_pets($1, $2, $3, $4, $5, $6, $7, $8, $9)'

export class PostgresPets {
  constructor(private readonly db: PooledStatements) {}

  async page({ afterId, status, limit }: PetPageQuery, deadline?: Deadline): Promise<Pet[]> {
    const after = afterId ?? FIRST_ID
    // Two statements rather than `status = $x OR $x IS NULL`, so each keeps its own index plan.
    const rows =
      status === null
        ? await this.db.query<PetRow>(
            'list-pets',
            `${SELECT_PET} WHERE id > $1 ORDER BY id LIMIT $2`,
            [after, limit],
            deadline,
          )
        : await this.db.query<PetRow>(
            'list-pets-by-status',
            `${SELECT_PET} WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
            [status, after, limit],
            deadline,
          )
    return rows.map(toPet)
  }

  async byId(id: bigint, deadline?: Deadline): Promise<Pet | null> {
    const [row] = await this.db.query<PetRow>(
      'get-pet',
      `${SELECT_PET} WHERE id = $1`,
      [id],
      deadline,
    )
    return row ? toPet(row) : null
  }

  /**
   * One batch of creates in one statement, so one round trip, bounded by its earliest deadline. A
   * create whose claim is no longer held gets no id: ClaimReleasedError in its place.
   */
  async commitCreates(items: CreateItem[]): Promise<(Pet | Error)[]> {
    const deadline = earliest(items.map((i) => i.deadline))
    const values = insertPetsValues(
      items.map((i) => i.pet),
      items.map((i) => i.completes),
      serverShare(this.db.budget(deadline)),
    )
    const { rows } = await this.db.run<{ id: bigint | null }>(
      this.db.statement('insert-pets', INSERT_PETS, values),
      deadline,
    )
    return items.map(({ pet }, i) => {
      const id = rows[i]!.id
      return id === null ? new ClaimReleasedError() : { id, ...pet }
    })
  }

  /** A bulk load (insertPets) in one statement. */
  async insertMany(pets: NewPet[]): Promise<void> {
    const none = pets.map(() => undefined)
    await this.db.run({
      text: INSERT_PETS,
      values: insertPetsValues(pets, none, serverShare(this.db.timeoutMs)),
    })
  }
}
