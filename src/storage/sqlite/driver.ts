// The better-sqlite3 this Node.js can run, both with the same API (13 needs Node.js 22, and 12
// aborts on Node.js 24.19 and later when a statement is collected: nodejs/node#65446), and the
// connections the store opens with it.
import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import type BetterSqlite3 from 'better-sqlite3'
import { DatabasePathError } from '../errors.js'
import { hasCode } from './faults.js'

const require = createRequire(import.meta.url)
const nodeMajor = Number(process.versions.node.split('.')[0])

export const SQLITE_DRIVER = nodeMajor >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3'
export const Database = require(SQLITE_DRIVER) as typeof BetterSqlite3

/** How long a connection waits for another's lock before SQLITE_BUSY (503 for the caller). */
export const BUSY_TIMEOUT_MS = 5000

/**
 * A connection with the settings every connection of the service uses. `create: false` for a second
 * one, which must find the file the first made; the first's path, if it cannot hold a store (SQLite
 * cannot open it, or it is no database), is a DatabasePathError.
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

export function hasTable(db: BetterSqlite3.Database, name: string): boolean {
  const row = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name)
  return row !== undefined
}
