// `petstore backup FILE`: a consistent copy of the embedded store, safe beside a running service.
// The copy is made in a directory of its own beside FILE and moved to FILE once complete and
// checked, so an interrupted backup never leaves a partial FILE, and leaves one entry to delete.
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import type { Command } from 'commander'
import { loadConfig } from '../config.js'
import { sqlitePathOf } from '../storage/open-store.js'
import {
  type BackupSummary,
  backupSqlite,
  NotAStoreError,
  SIDE_FILE_SUFFIXES,
  syncFile,
} from '../storage/sqlite/backup.js'
import { UsageError } from './command-context.js'

const alreadyExists = (file: string) =>
  new UsageError(`${file} already exists; choose another name, or pass --force to replace it`)

export function addBackupCommand(program: Command): void {
  program
    .command('backup')
    .description('copy the SQLite store to FILE, consistent even while a service writes to it')
    .argument('<file>', 'where to write the copy (a new file, in an existing directory)')
    .option('--force', 'replace FILE if it exists, once the new copy is complete and checked')
    .addHelpText(
      'after',
      '\nThe copy holds every pet committed before the backup began, passed\n' +
        'PRAGMA integrity_check, and is one self-contained file (no -wal beside it).\n' +
        'It is written in a directory FILE.partial-<pid> beside FILE and moved to FILE\n' +
        'when complete; one left by a killed backup is removed by the next backup to FILE.\n' +
        'Restore: stop the service, put the copy in place of the database file, delete\n' +
        'the old -wal and -shm files beside it, start. For PostgreSQL use pg_dump\n' +
        '(docs/operations.md, "Backup and restore").',
    )
    .action(async (file: string, opts: { force?: boolean }) => {
      const force = opts.force === true
      const source = sqliteSource(loadConfig().databaseUrl, file)
      checkTarget(file, source, force)
      for (const name of removeLeftovers(file)) {
        process.stderr.write(`removed ${name}, left by a backup that did not finish\n`)
      }
      const s = await writeBackup(source, file, force)
      process.stdout.write(
        `backed up ${source} to ${file}: ${plural(s.pets, 'pet')}, ${plural(s.apiKeys, 'API key')}, ` +
          `${s.bytes} bytes (${s.pages} pages of ${s.pageSize}); integrity check ok\n`,
      )
    })
}

/** The SQLite file to copy; any other store is refused, saying what to use instead. */
function sqliteSource(url: string, file: string): string {
  const path = sqlitePathOf(url)
  if (path === null) throw new UsageError(postgresAdvice(url, file))
  if (path === ':memory:') {
    throw new UsageError(
      'the store is in memory (PETSTORE_DATABASE_URL=sqlite::memory:): no file to back up',
    )
  }
  if (!existsSync(path)) {
    throw new UsageError(
      `no database at ${path} (PETSTORE_DATABASE_URL=${url}): nothing to back up`,
    )
  }
  return path
}

/** pg_dump for the configured database, the password left out: it would end up in a log. */
function postgresAdvice(url: string, file: string): string {
  const u = new URL(url)
  const hadPassword = u.password !== ''
  u.password = ''
  const lines = [
    'backup copies the embedded SQLite store; PETSTORE_DATABASE_URL names a PostgreSQL database.',
    'Use pg_dump instead, as docs/operations.md ("Backup and restore") describes:',
    `  pg_dump --format=custom --file=${shellQuote(file)} --dbname=${shellQuote(u.toString())}`,
  ]
  if (hadPassword) {
    lines.push('(the password is left out: pg_dump asks for it, or reads PGPASSWORD or ~/.pgpass)')
  }
  return lines.join('\n')
}

function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`
}

/** Refuses a FILE that cannot take the copy, before any work is done. */
function checkTarget(file: string, source: string, force: boolean): void {
  const dir = dirname(resolve(file))
  const dirStat = statSync(dir, { throwIfNoEntry: false })
  if (dirStat === undefined) throw new UsageError(`cannot write ${file}: no directory ${dir}`)
  if (!dirStat.isDirectory())
    throw new UsageError(`cannot write ${file}: ${dir} is not a directory`)
  if (isStoreFile(file, source)) {
    throw new UsageError(`${file} is the database being backed up, or one of its files`)
  }
  const target = statSync(file, { throwIfNoEntry: false })
  if (target?.isDirectory()) throw new UsageError(`${file} is a directory`)
  if (target !== undefined && !force) throw alreadyExists(file)
  // SQLite would take a -wal or hot -journal left beside FILE as part of the new copy: corruption.
  for (const suffix of SIDE_FILE_SUFFIXES) {
    if (existsSync(`${file}${suffix}`)) {
      throw new UsageError(
        `${file}${suffix} exists: a service may have ${file} open; stop it, or remove ${file}${suffix} if none has`,
      )
    }
  }
}

/** Whether `file` names the store's database file or one SQLite keeps beside it. */
function isStoreFile(file: string, source: string): boolean {
  const canonical = (path: string) => join(realpathSync(dirname(resolve(path))), basename(path))
  const target = canonical(file)
  const store = canonical(source)
  if (['', ...SIDE_FILE_SUFFIXES].some((suffix) => target === `${store}${suffix}`)) return true
  const a = statSync(file, { bigint: true, throwIfNoEntry: false })
  const b = statSync(source, { bigint: true })
  return a !== undefined && a.dev === b.dev && a.ino === b.ino
}

async function writeBackup(source: string, file: string, force: boolean): Promise<BackupSummary> {
  // The copy's own -journal (and -wal while its mode is switched) stay inside this directory.
  const partialDir = `${file}.partial-${process.pid}`
  const partial = join(partialDir, basename(file))
  rmSync(partialDir, { recursive: true, force: true })
  mkdirSync(partialDir, { mode: 0o700 })
  try {
    const summary = await backupSqlite(source, partial).catch((err: unknown) => {
      if (err instanceof NotAStoreError) throw new UsageError(err.message)
      throw new Error(`backup failed: ${err instanceof Error ? err.message : String(err)}`)
    })
    publish(partial, file, force)
    // The new name must outlive a crash too, not only the content.
    syncFile(dirname(resolve(file)))
    return summary
  } finally {
    rmSync(partialDir, { recursive: true, force: true })
  }
}

const LEFTOVER = /^(.*)\.partial-(\d+)(?:-journal)?$/

/**
 * Removes what backups to `file` left when killed: `FILE.partial-<pid>` of a process that no longer
 * runs (a directory; or a file and its -journal, as earlier versions wrote them). Returns their names.
 */
function removeLeftovers(file: string): string[] {
  const dir = dirname(resolve(file))
  const removed: string[] = []
  for (const name of readdirSync(dir)) {
    const match = LEFTOVER.exec(name)
    if (match === null || match[1] !== basename(file) || isRunning(Number(match[2]))) continue
    rmSync(join(dir, name), { recursive: true, force: true })
    removed.push(join(dirname(file), name))
  }
  return removed
}

/** Whether process `pid` runs (one of another user counts: it cannot be signalled, but it runs). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Gives the complete copy its name: atomically, and without --force never over another file. */
function publish(partial: string, file: string, force: boolean): void {
  if (force) {
    renameSync(partial, file)
    return
  }
  try {
    // A link fails if FILE appeared meanwhile, where a rename would replace it.
    linkSync(partial, file)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') throw alreadyExists(file)
    // A file system without hard links: the check above, then the rename.
    if (existsSync(file)) throw err
    renameSync(partial, file)
  }
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}
