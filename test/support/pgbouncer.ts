// A stock PgBouncer of the test's own, in transaction pooling mode, on a free port, in front of
// the test PostgreSQL: fewer server connections than clients, so that clients' transactions share
// them. PgBouncer must be installed (`npm run system-deps`): the tests fail, never skip, without it.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'
import { binDir } from './own-postgres.js'
import { freePort } from './process.js'
import { refuses, until } from './wait.js'

const run = promisify(execFile)
const BINARY = process.env.PETSTORE_TEST_PGBOUNCER ?? '/usr/sbin/pgbouncer'
/** The role PgBouncer runs as when the tests run as root, which it refuses. */
const RUN_AS = 'postgres'

export interface PgBouncerOptions {
  /** A URL of the PostgreSQL server it forwards to (its host and port are used). */
  server: string
  /** Server connections per database and user. */
  defaultPoolSize?: number
  maxClientConn?: number
  /** Seconds PgBouncer waits after a failed server login before trying again (its default: 15). */
  serverLoginRetry?: number
}

export interface OwnPgBouncer {
  port: number
  /** `url` (a database of the test server) with PgBouncer's address in place of the server's. */
  through(url: string): string
  /** What PgBouncer wrote, for failure messages. */
  output(): string
  /**
   * Points it at another server, as a failover runbook does: the [databases] line rewritten, then
   * `RELOAD` on the admin console (psql); server connections to the old one close when released.
   */
  repoint(server: string): Promise<void>
}

function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

/** The uid and gid of RUN_AS, which must own the files PgBouncer reads and writes once it runs as it. */
function runAsIds(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, RUN_AS], { encoding: 'utf8' }))
  return { uid: id('-u'), gid: id('-g') }
}

/** Starts PgBouncer in front of the test server; after `t` it is killed and its files removed. */
export async function startPgBouncer(
  t: Pick<TestContext, 'after'>,
  opts: PgBouncerOptions,
): Promise<OwnPgBouncer> {
  if (!existsSync(BINARY)) {
    throw new Error(
      `PgBouncer is not installed at ${BINARY}; install it with npm run system-deps (Debian package pgbouncer) or set PETSTORE_TEST_PGBOUNCER`,
    )
  }
  const server = new URL(opts.server)
  const user = decodeURIComponent(server.username) || RUN_AS
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'petstore-pgbouncer-'))
  const root = process.getuid?.() === 0
  let child: ChildProcess | undefined
  // The process first, then the files it may still be reading.
  t.after(async () => {
    if (child) {
      child.kill('SIGKILL')
      await ended(child)
    }
    rmSync(dir, { recursive: true, force: true })
  })
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`)
  const ini = join(dir, 'pgbouncer.ini')
  writeFileSync(ini, config(dir, port, user, server, opts))
  if (root) {
    const { uid, gid } = runAsIds()
    for (const f of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, f), uid, gid)
  }
  const started = spawn(BINARY, [...(root ? ['-u', RUN_AS] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child = started
  let out = ''
  const collect = (chunk: string) => {
    out += chunk
  }
  started.stdout!.setEncoding('utf8').on('data', collect)
  started.stderr!.setEncoding('utf8').on('data', collect)
  const spawnError = new Promise<Error>((resolve) => started.once('error', resolve))
  await Promise.race([
    until(`PgBouncer listens on 127.0.0.1:${port}`, async () => {
      if (started.exitCode !== null)
        throw new Error(`PgBouncer exited (${started.exitCode}):\n${out}`)
      return !(await refuses(port))
    }),
    spawnError.then((err) => {
      throw new Error(`PgBouncer did not start (${err.message}):\n${out}`)
    }),
  ])
  return {
    port,
    through(url: string) {
      const u = new URL(url)
      u.hostname = '127.0.0.1'
      u.port = String(port)
      return u.toString()
    },
    output: () => out,
    async repoint(to: string) {
      writeFileSync(ini, config(dir, port, user, new URL(to), opts))
      const admin = ['-h', '127.0.0.1', '-p', String(port), '-U', user, '-d', 'pgbouncer']
      await run(join(binDir(), 'psql'), [...admin, '-X', '-q', '-c', 'RELOAD'])
    },
  }
}

/** pgbouncer.ini: every database forwarded to `server`; `user` may use the admin console. */
function config(dir: string, port: number, user: string, server: URL, opts: PgBouncerOptions) {
  return [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'users.txt')}`,
    `admin_users = ${user}`,
    'pool_mode = transaction',
    `max_client_conn = ${opts.maxClientConn ?? 200}`,
    `default_pool_size = ${opts.defaultPoolSize ?? 5}`,
    // Waits for a server connection are bounded by the service's own timeouts, not PgBouncer's.
    'query_wait_timeout = 30',
    ...(opts.serverLoginRetry === undefined
      ? []
      : [`server_login_retry = ${opts.serverLoginRetry}`]),
    `pidfile = ${join(dir, 'pgbouncer.pid')}`,
    '',
  ].join('\n')
}
