import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import { DatabasePathError } from '../errors.js'
import { Database } from './driver.js'
import { hasCode } from './faults.js'

/** How long a connection waits for another's lock before SQLITE_BUSY (503 for the caller). */
export const BUSY_TIMEOUT_MS = 5000

/**
 * Opens a connection to the store's file with the settings every connection of the service uses.
 * `create: false` for a second connection, which must find the file the first one made. The first
 * connection's path is checked: one that cannot hold a store (a file SQLite cannot open, or that is
 * no database) is a DatabasePathError.
 */
export function openDatabase(path: string, opts: { create: boolean }): BetterSqlite3.Database {
  if (!opts.create) return configured(new Database(path, { fileMustExist: true }))
  if (path !== ':memory:') makeFolder(dirname(path))
  try {
    return configured(new Database(path))
  } catch (err) {
    if (!hasCode(err, 'SQLITE_CANTOPEN') && !hasCode(err, 'SQLITE_NOTADB')) throw err
    const { code, message } = err as { code: string; message: string }
    throw new DatabasePathError(`cannot open ${path} as a SQLite database (${code}: ${message})`, {
      cause: err,
    })
  }
}

function configured(db: BetterSqlite3.Database): BetterSqlite3.Database {
  try {
    // First, so that switching a new file to WAL waits for another process doing the same.
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    // WAL with synchronous=FULL syncs the log on every commit: a committed pet survives a crash of
    // the process and of the machine. NORMAL would survive only the former.
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.pragma('foreign_keys = ON')
  } catch (err) {
    db.close()
    throw err
  }
  db.defaultSafeIntegers(true)
  return db
}

/** The folder of a new file; what stands in the way is a DatabasePathError. */
function makeFolder(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true })
  } catch (err) {
    const { code, path } = err as NodeJS.ErrnoException
    const inTheWay = code === 'EEXIST' || code === 'ENOTDIR' ? ': a file is in the way' : ''
    throw new DatabasePathError(`cannot create the folder ${path ?? dir} (${code}${inTheWay})`, {
      cause: err,
    })
  }
}
