// A PostgreSQL server of the test's own (initdb in a temp dir, a free port), for faults the shared
// server must never see: frozen with SIGSTOP, as a server stuck on a dead disk or a paused VM is.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import pg from 'pg'
import { freePort } from './process.js'
import { until } from './wait.js'

/** The role the server runs as when the tests run as root, which PostgreSQL refuses. */
const RUN_AS = 'postgres'

export interface OwnPostgres {
  /** The `postgres` database as the superuser `postgres`, trust auth, on 127.0.0.1. */
  url: string
  /** Stops every process of the server (SIGSTOP): connections stay open, nothing is answered. */
  freeze(): void
  /** Lets them run again (SIGCONT). */
  thaw(): void
}

/** The uid and gid of the role the servers run as, which must own their files. */
export function runAsIds(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, RUN_AS], { encoding: 'utf8' }))
  return { uid: id('-u'), gid: id('-g') }
}

/** The newest PostgreSQL server binaries installed (initdb, pg_ctl, pg_basebackup, psql ...). */
export function binDir(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
  if (versions.length === 0) throw new Error('no PostgreSQL server binaries in /usr/lib/postgresql')
  return `/usr/lib/postgresql/${versions[0]}/bin`
}

/** The server's processes: the postmaster and its children (backends, checkpointer, ...). */
function processesOf(postmaster: number): number[] {
  let children: string
  try {
    children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
  } catch {
    children = ''
  }
  return [postmaster, ...children.split('\n').filter(Boolean).map(Number)]
}

function signalAll(postmaster: number, signal: NodeJS.Signals): void {
  for (const pid of processesOf(postmaster)) {
    try {
      process.kill(pid, signal)
    } catch {
      // Gone meanwhile (a backend that ended).
    }
  }
}

/** Starts a server of its own; after `t` it is thawed, stopped and its files removed. */
export async function startOwnPostgres(t: Pick<TestContext, 'after'>): Promise<OwnPostgres> {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), 'petstore-own-postgres-'))
  const data = join(dir, 'data')
  // As root, the server runs as RUN_AS, which owns its files: PostgreSQL refuses to run as root.
  const ids: { uid?: number; gid?: number } = process.getuid?.() === 0 ? runAsIds() : {}
  if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid!)
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync'], {
    stdio: 'ignore',
    ...ids,
  })
  const port = await freePort()
  const args = [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
  ]
  let output = ''
  const child: ChildProcess = spawn(join(bin, 'postgres'), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...ids,
  })
  child.stdout!.on('data', (b: Buffer) => (output += b))
  child.stderr!.on('data', (b: Buffer) => (output += b))
  const postmaster = child.pid!
  t.after(async () => {
    signalAll(postmaster, 'SIGCONT')
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGINT')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  })
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  await until(
    `the test's own PostgreSQL accepts connections (${output})`,
    async () => {
      const client = new pg.Client({ connectionString: url })
      try {
        await client.connect()
        await client.end()
        return true
      } catch {
        return false
      }
    },
    60_000,
  )
  return {
    url,
    freeze: () => signalAll(postmaster, 'SIGSTOP'),
    thaw: () => signalAll(postmaster, 'SIGCONT'),
  }
}
