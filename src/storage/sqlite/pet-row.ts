import type { Pet, PetStatus } from '../store.js'

/** A pets row as an array (`id, name, category_id, status`): the statements run in raw mode. */
export type PetRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

/** One pet by id, as a PetRow. */
export const PET_BY_ID = 'SELECT id, name, category_id, status FROM pets WHERE id = ?'

/**
 * One pet by id as the JSON text the routes' serializer writes for it (`Pet` in
 * src/pets/schemas.ts): the same keys in the same order, no `status` when it is null, integers in
 * full. SQLite's JSON escapes are JSON.stringify's for every string a name can be (names are
 * valid Unicode without U+0000); test/hot-path.test.ts compares the two for names with every
 * ASCII control, quotes, backslashes and characters beyond the BMP.
 *
 * Why: for the hot path's get, better-sqlite3 building the row's array value by value and the
 * serializer writing it again as text were a sizeable part of the work (docs/performance.md);
 * SQLite writes the text in C, and one string crosses into JavaScript.
 */
export const PET_JSON_BY_ID = `SELECT CASE WHEN status IS NULL
    THEN json_object('id', id, 'name', name, 'categoryId', category_id)
    ELSE json_object('id', id, 'name', name, 'categoryId', category_id, 'status', status) END
  FROM pets WHERE id = ?`

// Rows come as arrays rather than objects: better-sqlite3 builds a row object property by
// property, which was the largest single cost of a list request in the CPU profile.
export const toPet = (row: PetRow): Pet => {
  const status = row[3]
  return status === null
    ? { id: row[0], name: row[1], categoryId: row[2] }
    : { id: row[0], name: row[1], categoryId: row[2], status }
}
