// `petstore serve --workers N` as a real process tree for the tests: start it, read its output
// (start-up lines and JSON log lines of the primary and of every worker), and call it over fresh
// connections, so the primary's round robin hands each request to the next worker.

import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  type Exit,
  listening,
  type ServiceOptions,
  type ServiceProcess as Spawned,
  spawnService,
} from './process.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export type { Exit }

/** A JSON log line; the primary and the workers write the same shape (pino's). */
export interface LogLine {
  level: number
  pid: number
  msg: string
  [field: string]: unknown
}

export interface ServiceProcess extends Spawned {
  /** The primary's pid (the only process when serving alone); npm's when started by npm. */
  pid: number
  /** 0 until it listens. */
  port: number
  /** Every stdout line that is a JSON log line, in order. */
  logLines(): LogLine[]
}

export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export function parseLogLines(text: string): LogLine[] {
  const lines: LogLine[] = []
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue
    try {
      lines.push(JSON.parse(line) as LogLine)
    } catch {
      // Not a whole JSON line: the test's assertions say what they need from the others.
    }
  }
  return lines
}

/** Pids of the workers that announced they listen, in the order they did. */
export function listeningWorkerPids(lines: LogLine[]): number[] {
  return lines.filter((l) => l.msg === 'worker listening').map((l) => l.workerPid as number)
}

/**
 * A temp dir and the services started in it, on a SQLite file there unless a test's environment
 * names another database. After `t`, every process still running, workers included, is killed,
 * and the dir removed.
 */
export function serviceHarness(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-workers-'))
  const services: ServiceProcess[] = []
  t.after(async () => {
    for (const s of services) {
      // Every process that logged, too: the node that `npm start` runs is not npm's pid.
      const logged = s.logLines().map((l) => l.pid)
      const pids = new Set([s.pid, ...listeningWorkerPids(s.logLines()), ...logged])
      for (const pid of pids) if (isRunning(pid)) process.kill(pid, 'SIGKILL')
    }
    await Promise.all(services.map((s) => s.exited))
    rmSync(dir, { recursive: true, force: true })
  })

  const options = (
    env: Record<string, string>,
    more: Partial<ServiceOptions> = {},
  ): ServiceOptions => ({
    cwd: dir,
    env: { PETSTORE_LOG_FORMAT: 'json', PETSTORE_RATE_LIMIT_MAX: '100000000', ...env },
    ...more,
  })
  const track = (spawned: Spawned): ServiceProcess => {
    const service = {
      ...spawned,
      pid: spawned.child.pid!,
      port: 0,
      logLines: () => parseLogLines(spawned.stdout()),
    }
    services.push(service)
    return service
  }
  // Tracked before it listens, so the workers of a start that never gets there are killed too.
  const started = async (opts: ServiceOptions): Promise<ServiceProcess> => {
    const service = track(spawnService(t, opts))
    service.port = (await listening(service, opts.env)).port
    return service
  }

  /** Starts `petstore serve <args>` and waits for its listening line. */
  const start = (args: string[], env: Record<string, string> = {}): Promise<ServiceProcess> =>
    started(options(env, { args: ['serve', ...args] }))

  /**
   * Starts the service the way `npm start` does, from the project's folder, and waits for its
   * listening line. `detached`: in a process group of its own, as a terminal's foreground job.
   */
  const startNpm = (
    env: Record<string, string> = {},
    opts: { detached?: boolean } = {},
  ): Promise<ServiceProcess> =>
    started(options(env, { command: 'npm', args: ['--prefix', ROOT, 'start'], ...opts }))

  /** Runs `petstore <args>` to its end. */
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const service = track(spawnService(t, options(env, { args })))
    const exit = await service.exited
    return { ...exit, stdout: service.stdout(), stderr: service.stderr() }
  }

  return { dir, start, startNpm, run }
}

export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request on a connection of its own (no keep-alive), so each is handed out anew. */
export function call(
  port: number,
  opts: {
    method?: string
    path: string
    key?: string
    body?: string
    headers?: Record<string, string>
  },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`
    if (opts.body !== undefined) headers['content-type'] = 'application/json'
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: opts.method ?? 'GET',
        path: opts.path,
        headers,
        agent: false,
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(opts.body)
  })
}

export interface Pet {
  id: number
  name: string
  categoryId: number
  status?: string
}

/** Every pet, walking `Link: <...>; rel="next"` from a first page of 100 (ids stay below 2^53). */
export async function listAllPets(port: number, key: string): Promise<Pet[]> {
  const pets: Pet[] = []
  let path: string | null = '/v1/pets?limit=100'
  while (path !== null) {
    const res: Reply = await call(port, { path, key })
    if (res.status !== 200) throw new Error(`listPets answered ${res.status}: ${res.body}`)
    pets.push(...(JSON.parse(res.body) as Pet[]))
    const next = /<https?:\/\/[^/]+([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))
    path = next ? next[1]! : null
  }
  return pets
}

export interface CreateOutcome {
  name: string
  reply: Reply
}

/**
 * `clients` clients creating pets one after another with `key`, each pet with a name never used
 * before, until stopped: what each create was answered, and how many were answered `status`
 * (with exactly `body`, when given).
 */
export function startCreateLoad(port: number, key: string, clients: number) {
  const outcomes: CreateOutcome[] = []
  let stopped = false
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let n = 0; !stopped; n++) {
      const name = `load-${c}-${n}`
      const body = JSON.stringify({ name, categoryId: 7, status: 'available' })
      outcomes.push({
        name,
        reply: await call(port, { method: 'POST', path: '/v1/pets', key, body }),
      })
    }
  })
  return {
    outcomes,
    count: (status: number, body?: object) =>
      outcomes.filter(
        (o) =>
          o.reply.status === status &&
          (body === undefined || o.reply.body === JSON.stringify(body)),
      ).length,
    stop: async () => {
      stopped = true
      await Promise.all(loops)
    },
  }
}
