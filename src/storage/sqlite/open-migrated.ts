import { setTimeout } from 'node:timers/promises'
import type Database from 'better-sqlite3'
import { hasTable, openDatabase } from './driver.js'
import { hasCode } from './faults.js'
import { SQLITE_MIGRATION_NAMES } from './migration-names.js'

const BUSY_ATTEMPTS = 5

/**
 * A connection to the file with the schema up to date, and the migrations applied just now, by
 * name. Processes starting together on a new file can get SQLITE_BUSY at once (waiting could
 * deadlock); both steps are idempotent, so it retries.
 */
export async function openMigrated(
  path: string,
): Promise<{ db: Database.Database; migrated: string[] }> {
  for (let attempt = 1; ; attempt++) {
    let db: Database.Database | undefined
    try {
      db = openDatabase(path, { create: true })
      return { db, migrated: await migrateSqlite(db) }
    } catch (err) {
      db?.close()
      if (!hasCode(err, 'SQLITE_BUSY') || attempt === BUSY_ATTEMPTS) throw err
      await setTimeout(20 * attempt)
    }
  }
}

/** The migrations applied now, by name; Kysely, slow to load, only when one is due. */
export async function migrateSqlite(db: Database.Database): Promise<string[]> {
  if (hasTable(db, 'kysely_migration')) {
    const applied = new Set(db.prepare('SELECT name FROM kysely_migration').pluck().all())
    if (SQLITE_MIGRATION_NAMES.every((name) => applied.has(name))) return []
  }
  const { runSqliteMigrations } = await import('./migrations.js')
  return runSqliteMigrations(db)
}
