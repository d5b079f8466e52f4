// A primary and a streaming standby of the test's own, each a cluster made by initdb and
// pg_basebackup -R and run by pg_ctl, for failovers the shared server must never see. The primary
// waits for the standby's flush before a commit returns (synchronous_standby_names), so a commit
// it acknowledged is on the standby when the primary dies.
import { execFile } from 'node:child_process'
import { appendFileSync, chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'
import pg from 'pg'
import { binDir, runAsIds } from './own-postgres.js'
import { freePort } from './process.js'
import { until } from './wait.js'

const run = promisify(execFile)
/** The standby's cluster_name: its application_name on the primary, as a walreceiver falls back to it. */
export const STANDBY_NAME = 'standby1'

export interface Cluster {
  port: number
  /** The `postgres` database as the superuser `postgres`, trust auth, on 127.0.0.1. */
  url: string
  data: string
}

export interface ReplicatedPostgres {
  primary: Cluster
  standby: Cluster
  /** `pg_ctl stop -m immediate` on the primary: no checkpoint, as a crash. */
  stopPrimary(): Promise<void>
  /** `pg_ctl promote` on the standby; resolves once it takes writes (pg_is_in_recovery() false). */
  promoteStandby(): Promise<void>
  /**
   * After a promotion: `pg_rewind` of the stopped old primary from the new one, started as its
   * standby under `name`, made synchronous; resolves once it streams as `sync`.
   */
  rejoinOldPrimary(name: string): Promise<void>
}

export interface ReplicatedOptions {
  /** The primary's synchronous_standby_names: the standby's name (the default) or '' (asynchronous). */
  synchronousStandbyNames?: string
  /** fsync on both servers; off unless asked, as nothing here survives a crash of the host. */
  fsync?: boolean
}

/** One row of `sql` on the server at `url`. */
export async function queryOne<R extends pg.QueryResultRow>(
  url: string,
  sql: string,
): Promise<R | undefined> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<R>(sql)).rows[0]
  } finally {
    await client.end()
  }
}

/**
 * Starts the primary, clones the standby from it, starts that, and resolves once the standby
 * streams and is the synchronous one. After `t` both are stopped (immediate) and the files removed.
 */
export async function startReplicatedPostgres(
  t: Pick<TestContext, 'after'>,
  opts: ReplicatedOptions = {},
): Promise<ReplicatedPostgres> {
  const bin = (name: string) => join(binDir(), name)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-replicated-'))
  // As root, the servers run as the postgres role, which owns their files: PostgreSQL refuses root.
  const ids: { uid?: number; gid?: number } = process.getuid?.() === 0 ? runAsIds() : {}
  if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid!)
  const as = (name: string, args: string[]) => run(bin(name), args, { ...ids, cwd: dir })
  const started: Cluster[] = []
  t.after(async () => {
    for (const c of started) {
      await as('pg_ctl', ['stop', '-D', c.data, '-m', 'immediate', '-w']).catch(() =>
        killPostmaster(c),
      )
    }
    rmSync(dir, { recursive: true, force: true })
  })
  const [primary, standby] = await Promise.all(['primary', 'standby'].map((n) => cluster(dir, n)))
  const start = async (c: Cluster, name: string, settings: string[]) => {
    // Settings of one server on its command line: pg_basebackup copies the configuration files.
    const options = ['-p', String(c.port), '-k', dir, ...settings.flatMap((s) => ['-c', s])]
    if (!started.includes(c)) started.push(c)
    await as('pg_ctl', [
      'start',
      '-D',
      c.data,
      '-l',
      join(dir, `${name}.log`),
      '-w',
      '-o',
      options.join(' '),
    ]).catch((err: Error) => {
      throw new Error(`${name} did not start: ${err.message}\n${logOf(dir, name)}`)
    })
  }
  await as('initdb', ['-D', primary!.data, '-U', 'postgres', '--auth=trust', '--no-sync'])
  // What pg_rewind needs to bring the old primary back, in the configuration file: the crash
  // recovery it runs first reads no command line. wal_log_hints (or data checksums); and the WAL
  // back to the last checkpoint before the timelines forked, which that recovery's own checkpoint
  // would otherwise recycle. pg_basebackup copies the file to the standby.
  appendFileSync(
    join(primary!.data, 'postgresql.conf'),
    '\nwal_log_hints = on\nwal_keep_size = 256MB\n',
  )
  const common = ['listen_addresses=127.0.0.1', `fsync=${opts.fsync === true ? 'on' : 'off'}`]
  await start(primary!, 'primary', common)
  await as('pg_basebackup', [
    ...['-h', '127.0.0.1', '-p', String(primary!.port), '-U', 'postgres'],
    ...['-D', standby!.data, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync'],
  ])
  await start(standby!, 'standby', [...common, `cluster_name=${STANDBY_NAME}`])
  await makeSynchronous(primary!.url, opts.synchronousStandbyNames ?? STANDBY_NAME)
  return {
    primary: primary!,
    standby: standby!,
    stopPrimary: async () => {
      await as('pg_ctl', ['stop', '-D', primary!.data, '-m', 'immediate', '-w'])
    },
    promoteStandby: async () => {
      await as('pg_ctl', ['promote', '-D', standby!.data, '-w'])
      await until('the promoted standby leaves recovery', async () => {
        const row = await queryOne<{ r: boolean }>(standby!.url, 'SELECT pg_is_in_recovery() AS r')
        return row?.r === false
      })
    },
    rejoinOldPrimary: async (name: string) => {
      const source = `host=127.0.0.1 port=${standby!.port} user=postgres dbname=postgres`
      // pg_rewind reads the source's timeline from its control file, which a promotion updates
      // only at its next checkpoint: without one, the rewound server could not follow it.
      await queryOne(standby!.url, 'CHECKPOINT')
      await as('pg_rewind', [
        ...['--target-pgdata', primary!.data, '--source-server', source],
        '--write-recovery-conf',
      ])
      await start(primary!, 'primary', [...common, `cluster_name=${name}`])
      await makeSynchronous(standby!.url, name)
    },
  }
}

/**
 * Names `names` in the primary's synchronous_standby_names (ALTER SYSTEM and a reload, as on a live
 * primary) and waits until the standby of that name streams, as `sync` ('' : as `async`).
 */
async function makeSynchronous(url: string, names: string): Promise<void> {
  await queryOne(url, `ALTER SYSTEM SET synchronous_standby_names = '${names}'`)
  await queryOne(url, 'SELECT pg_reload_conf()')
  const name = names === '' ? STANDBY_NAME : names
  const wanted = names === '' ? 'async' : 'sync'
  await until(`standby ${name} streams as ${wanted}`, async () => {
    const row = await queryOne<{ state: string; sync_state: string }>(
      url,
      `SELECT state, sync_state FROM pg_stat_replication WHERE application_name = '${name}'`,
    )
    return row?.state === 'streaming' && row.sync_state === wanted
  })
}

async function cluster(dir: string, name: string): Promise<Cluster> {
  const port = await freePort()
  return { port, url: `postgres://postgres@127.0.0.1:${port}/postgres`, data: join(dir, name) }
}

function logOf(dir: string, name: string): string {
  try {
    return readFileSync(join(dir, `${name}.log`), 'utf8')
  } catch {
    return '(no log)'
  }
}

/** The last resort of the clean-up: the postmaster named in postmaster.pid, killed. */
function killPostmaster(c: Cluster): void {
  try {
    const pid = Number(readFileSync(join(c.data, 'postmaster.pid'), 'utf8').split('\n')[0])
    // A pid file left behind may name another process by now.
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
    if (pid > 0 && comm === 'postgres') process.kill(pid, 'SIGKILL')
  } catch {
    // Not running: no pid file, or the process is gone.
  }
}
