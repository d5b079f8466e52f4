import { setTimeout } from 'node:timers/promises'
import type Database from 'better-sqlite3'
import { openDatabase } from './connection.js'
import { hasCode } from './faults.js'
import { migrateSqlite } from './migrate.js'

const BUSY_ATTEMPTS = 5

/** A connection to the store's file, and the migrations applied to it just now, by name. */
export interface MigratedDatabase {
  db: Database.Database
  migrated: string[]
}

/**
 * A connection to the file with the schema up to date. Processes starting together on a new file
 * can get SQLITE_BUSY at once (waiting could deadlock); both steps are idempotent, so it retries.
 */
export async function openMigrated(path: string): Promise<MigratedDatabase> {
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
