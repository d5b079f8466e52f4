import type { Pet, PetStatus } from '../store.js'

/** A pets row as an array (`id, name, category_id, status`): the statements run in raw mode. */
export type PetRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

/** One pet by id, as a PetRow. */
export const PET_BY_ID = 'SELECT id, name, category_id, status FROM pets WHERE id = ?'

/**
 * One pet by id as the text the `Pet` serializer writes (same keys, order and escapes; no null
 * status), written by SQLite in C (docs/performance.md); test/fast-lane.test.ts compares the two.
 */
export const PET_JSON_BY_ID = `SELECT CASE WHEN status IS NULL
    THEN json_object('id', id, 'name', name, 'categoryId', category_id)
    ELSE json_object('id', id, 'name', name, 'categoryId', category_id, 'status', status) END
  FROM pets WHERE id = ?`

// Rows come as arrays, which better-sqlite3 builds faster than objects (property by property).
export const toPet = (row: PetRow): Pet => {
  const status = row[3]
  return status === null
    ? { id: row[0], name: row[1], categoryId: row[2] }
    : { id: row[0], name: row[1], categoryId: row[2], status }
}
