import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import { Database } from './driver.js'

/** How long a connection waits for another's lock before SQLITE_BUSY (503 for the caller). */
export const BUSY_TIMEOUT_MS = 5000

/**
 * Opens a connection to the store's file with the settings every connection of the service uses.
 * `create: false` for a second connection, which must find the file the first one made.
 */
export function openDatabase(path: string, opts: { create: boolean }): BetterSqlite3.Database {
  if (opts.create && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path, { fileMustExist: !opts.create })
  // First, so that switching a new file to WAL waits for another process doing the same.
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  // WAL with synchronous=FULL syncs the log on every commit: a committed pet survives a crash of
  // the process and of the machine. NORMAL would survive only the former.
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.defaultSafeIntegers(true)
  return db
}
