// A copy of a live SQLite store through SQLite's online backup API: one consistent snapshot, then
// turned into a single self-contained file and checked before anyone relies on it.
import { closeSync, fsyncSync, openSync, rmSync, statSync } from 'node:fs'
import type BetterSqlite3 from 'better-sqlite3'
import { BUSY_TIMEOUT_MS, Database, hasTable } from './driver.js'
import { hasCode } from './faults.js'

/**
 * Pages per backup step: all of them. A write by another process between steps restarts the copy,
 * so small steps under a steady load might never end; in WAL mode the long read blocks no writer.
 */
const ALL_PAGES = 0x7fffffff

/** The files SQLite may keep beside a database. */
export const SIDE_FILE_SUFFIXES = ['-wal', '-shm', '-journal'] as const

/** The copy's size, and what it holds. */
export type BackupSummary = ReturnType<typeof makeSelfContained>

/** The source cannot be backed up as a pet store: said as the operator should read it. */
export class NotAStoreError extends Error {}

/**
 * Copies the store at `source` (which a running service may be writing) to `destination`, a path
 * nothing else uses: the copy is in rollback-journal mode, so it needs no -wal file, passed
 * `PRAGMA integrity_check` and is synced to disk. On failure nothing is left at `destination`.
 */
export async function backupSqlite(source: string, destination: string): Promise<BackupSummary> {
  removeWithSideFiles(destination)
  try {
    await copySnapshot(source, destination)
    const summary = makeSelfContained(destination)
    syncFile(destination)
    return summary
  } catch (err) {
    removeWithSideFiles(destination)
    throw err
  }
}

async function copySnapshot(source: string, destination: string): Promise<void> {
  // Not read-only, which could not remove the -wal and -shm files it makes when it closes last.
  // It writes nothing; SQLite falls back to reading only when the file is write-protected.
  const db = new Database(source, { fileMustExist: true })
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    if (!hasTable(db, 'pets')) {
      throw new NotAStoreError(`${source} is not a pet store database (it has no pets table)`)
    }
    await db.backup(destination, { progress: () => ALL_PAGES })
  } catch (err) {
    if (hasCode(err, 'SQLITE_NOTADB'))
      throw new NotAStoreError(`${source} is not a SQLite database`)
    throw err
  } finally {
    db.close()
  }
}

/**
 * The copy's header still says WAL: opened later it would make -wal and -shm files, and could not
 * be opened read-only in a folder it cannot write. A service started on it turns WAL back on.
 */
function makeSelfContained(path: string) {
  const db = new Database(path, { fileMustExist: true })
  try {
    const mode = db.pragma('journal_mode = DELETE', { simple: true })
    if (mode !== 'delete') throw new Error(`the copy stayed in journal mode ${String(mode)}`)
    const problems = integrityProblems(db)
    if (problems.length > 0) {
      // Pages are copied as they are: a damaged copy means a damaged store (or disk).
      throw new Error(
        `the copy failed PRAGMA integrity_check: ${problems.slice(0, 3).join('; ')}; ` +
          'the store itself may be damaged',
      )
    }
    const count = (sql: string) => Number(db.prepare(sql).pluck().get())
    return {
      bytes: statSync(path).size,
      pages: count('PRAGMA page_count'),
      pageSize: count('PRAGMA page_size'),
      pets: count('SELECT count(*) FROM pets'),
      apiKeys: hasTable(db, 'api_keys') ? count('SELECT count(*) FROM api_keys') : 0,
    }
  } finally {
    db.close()
  }
}

/** What `PRAGMA integrity_check` finds wrong; some damage makes it fail instead of listing it. */
function integrityProblems(db: BetterSqlite3.Database): string[] {
  try {
    const rows = db.pragma('integrity_check') as { integrity_check: string }[]
    return rows.map((r) => r.integrity_check).filter((text) => text !== 'ok')
  } catch (err) {
    if (hasCode(err, 'SQLITE_CORRUPT')) return [(err as Error).message]
    throw err
  }
}

/** Syncs a file's content, or (for a directory) the names in it. */
export function syncFile(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function removeWithSideFiles(path: string): void {
  for (const suffix of ['', ...SIDE_FILE_SUFFIXES]) rmSync(`${path}${suffix}`, { force: true })
}
