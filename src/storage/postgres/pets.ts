// Reads and writes of the pets table on PostgreSQL.
import type { CreateItem } from '../create-item.js'
import type { IdempotencyRef, NewPet, Pet, PetPageQuery, PetStatus } from '../store.js'
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
 * insert_pets's arguments (migration 004): the pets, the claims they complete, and the longest
 * wait for a lock, past which the server gives up the insert rather than make it after the caller
 * was told it failed.
 */
function insertPetsValues(
  pets: readonly NewPet[],
  claims: readonly (IdempotencyRef | undefined)[],
  lockWaitMs: number,
): unknown[] {
  return [
    pets.map((p) => p.name),
    pets.map((p) => p.categoryId),
    pets.map((p) => p.status ?? null),
    Date.now(),
    claims.map((c) => c?.apiKeyId ?? null),
    claims.map((c) => c?.key ?? null),
    lockWaitMs,
  ]
}

export class PostgresPets {
  constructor(private readonly db: PooledStatements) {}

  async page({ afterId, status, limit }: PetPageQuery): Promise<Pet[]> {
    const after = afterId ?? FIRST_ID
    // Two statements rather than `status = $x OR $x IS NULL`, so each keeps its own index plan.
    const rows =
      status === null
        ? await this.db.query<PetRow>(
            'list-pets',
            `${SELECT_PET} WHERE id > $1 ORDER BY id LIMIT $2`,
            [after, limit],
          )
        : await this.db.query<PetRow>(
            'list-pets-by-status',
            `${SELECT_PET} WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
            [status, after, limit],
          )
    return rows.map(toPet)
  }

  async byId(id: bigint): Promise<Pet | null> {
    const [row] = await this.db.query<PetRow>('get-pet', `${SELECT_PET} WHERE id = $1`, [id])
    return row ? toPet(row) : null
  }

  /** One batch of creates in one statement, so one round trip. */
  async commitCreates(items: CreateItem[]): Promise<Pet[]> {
    const { rows } = await this.db.run<{ id: bigint }>(
      this.db.statement(
        'insert-pets',
        'SELECT id FROM insert_pets($1, $2, $3, $4, $5, $6, $7)',
        insertPetsValues(
          items.map((i) => i.pet),
          items.map((i) => i.completes),
          serverMilliseconds(this.db.timeoutMs),
        ),
      ),
    )
    return items.map(({ pet }, i) => ({ id: rows[i]!.id, ...pet }))
  }

  /** A bulk load (insertPets) in one statement. */
  async insertMany(pets: NewPet[]): Promise<void> {
    await this.db.run({
      text: 'SELECT count(*) FROM insert_pets($1, $2, $3, $4, $5, $6, $7)',
      values: insertPetsValues(
        pets,
        pets.map(() => undefined),
        serverMilliseconds(this.db.timeoutMs),
      ),
    })
  }
}
