import type { Pet, PetStatus } from '../store.js'

/** A pets row as an array (`id, name, category_id, status`): the statements run in raw mode. */
export type PetRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

/** One pet by id, as a PetRow. */
export const PET_BY_ID = 'SELECT id, name, category_id, status FROM pets WHERE id = ?'

// Rows come as arrays, which better-sqlite3 builds faster than objects (property by property).
export const toPet = (row: PetRow): Pet => {
  const status = row[3]
  return status === null
    ? { id: row[0], name: row[1], categoryId: row[2] }
    : { id: row[0], name: row[1], categoryId: row[2], status }
}
