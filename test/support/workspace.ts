// A temporary directory for one test, and the `petstore` processes run in it: on a SQLite file
// there unless a test's environment names another database. After the test every process still
// running, workers included, is killed, and then the directory removed.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  type Exit,
  listening,
  type ServiceOptions,
  type ServiceProcess,
  type StartedService,
  spawnService,
} from './process.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** A new directory, removed after `t`. */
export function tempDir(t: TestContext, prefix = 'petstore-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export interface RunResult extends Exit {
  stdout: string
  stderr: string
}

export interface Workspace {
  dir: string
  /** The SQLite file the processes use unless told otherwise. */
  dbPath: string
  /** Starts `petstore serve <args>` and waits for its listening line. */
  start(args?: string[], env?: Record<string, string>): Promise<StartedService>
  /**
   * Starts the service the way `npm start` does, from the project's folder, and waits for its
   * listening line. `detached`: in a process group of its own, as a terminal's foreground job.
   */
  startNpm(env?: Record<string, string>, opts?: { detached?: boolean }): Promise<StartedService>
  /** Runs `petstore <args>` to its end; killed with SIGTERM after `timeout` ms (a minute). */
  run(args: string[], env?: Record<string, string>, timeout?: number): Promise<RunResult>
}

/** `defaults`: settings of every process started here, under each call's own. */
export function workspace(t: TestContext, defaults: Record<string, string> = {}): Workspace {
  const services: ServiceProcess[] = []
  // Registered before any process's own clean-up, so it runs first: the processes go, then the dir.
  const dir = mkdtempSync(join(tmpdir(), 'petstore-'))
  t.after(async () => {
    await Promise.all(services.map((s) => s.killAll()))
    rmSync(dir, { recursive: true, force: true })
  })
  const spawned = (env: Record<string, string>, more: ServiceOptions): ServiceProcess => {
    const service = spawnService(t, { cwd: dir, env: { ...defaults, ...env }, ...more })
    services.push(service)
    return service
  }
  // Tracked before it listens, so the workers of a start that never gets there are killed too.
  const started = async (env: Record<string, string>, more: ServiceOptions) => {
    const service = spawned(env, more)
    return { ...service, ...(await listening(service, { ...defaults, ...env })) }
  }
  return {
    dir,
    dbPath: join(dir, 'petstore.db'),
    start: (args = [], env = {}) => started(env, { args: ['serve', ...args] }),
    startNpm: (env = {}, opts = {}) =>
      started(env, { command: 'npm', args: ['--prefix', ROOT, 'start'], ...opts }),
    run: async (args, env = {}, timeout = 60_000) => {
      const service = spawned(env, { args, timeout })
      const exit = await service.exited
      return { ...exit, stdout: service.stdout(), stderr: service.stderr() }
    },
  }
}

/** Settings for services whose log lines a test reads, with no rate limit in the way. */
export const JSON_LOGS_NO_LIMIT = {
  PETSTORE_LOG_FORMAT: 'json',
  PETSTORE_RATE_LIMIT_MAX: '100000000',
}

/**
 * Runs every `petstore <args>` of `cases` at once: each exits 2, prints nothing on stdout, and
 * says `message` on the first line of stderr.
 */
export async function assertUsageErrors(
  w: Pick<Workspace, 'run'>,
  cases: [string[], string][],
): Promise<void> {
  const results = await Promise.all(cases.map(([args]) => w.run(args)))
  for (const [i, [args, message]] of cases.entries()) {
    const res = results[i]!
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`)
    assert.equal(res.stdout, '', args.join(' '))
    assert.equal(res.stderr.split('\n')[0], message, args.join(' '))
  }
}
