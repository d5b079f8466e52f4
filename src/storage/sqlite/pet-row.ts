import type { Pet, PetStatus } from '../store.js'

/** A pets row as an array (`id, name, category_id, status`): the statements run in raw mode. */
export type PetRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

/** One pet by id, as a PetRow: the main connection's and the snapshot reader's statement. */
export const PET_BY_ID = 'SELECT id, name, category_id, status FROM pets WHERE id = ?'

// Rows come as arrays rather than objects: better-sqlite3 builds a row object property by
// property, which was the largest single cost of a list request in the CPU profile.
export const toPet = (row: PetRow): Pet => {
  const status = row[3]
  return status === null
    ? { id: row[0], name: row[1], categoryId: row[2] }
    : { id: row[0], name: row[1], categoryId: row[2], status }
}
