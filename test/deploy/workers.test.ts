// `petstore serve --workers N` on SQLite, as real processes: one port shared by the workers
// (PORT=0 included), one bootstrap key, requests spread over every worker and all of them kept,
// metrics summed by the primary, SIGTERM draining every worker, a killed worker replaced, rate
// limits per worker in memory and one budget in Redis, and bad worker counts refused.

import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { call, listAllPets, type Pet } from '../support/api.js'
import { assertDraining, halfSentCreate, openConnection, readiness } from '../support/drain.js'
import {
  bootstrapKey,
  isRunning,
  type LogLine,
  listeningWorkerPids,
  parseLogLines,
  type StartedService,
} from '../support/process.js'
import { forStore } from '../support/stores.js'
import { listenerClosed } from '../support/wait.js'
import { JSON_LOGS_NO_LIMIT, workspace } from '../support/workspace.js'

const KEY = 'workers-test-key-0123456789abcdef'
const ANY_KEY = /pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}/g

function countOf(text: string, part: string): number {
  return text.split(part).length - 1
}

/** Pids of the processes that logged a completed request, with how many each answered. */
function requestsByPid(lines: LogLine[]): Map<number, number> {
  const byPid = new Map<number, number>()
  for (const line of lines) {
    if (line.msg === 'request completed') byPid.set(line.pid, (byPid.get(line.pid) ?? 0) + 1)
  }
  return byPid
}

async function createPet(
  port: number,
  key: string,
  name: string,
  headers: Record<string, string> = {},
): Promise<Pet> {
  const body = `{"name":${JSON.stringify(name)},"categoryId":7,"status":"available"}`
  const res = await call(port, { method: 'POST', path: '/v1/pets', key, body, headers })
  assert.equal(res.status, 201, res.body)
  const pet = JSON.parse(res.body) as Pet
  assert.deepEqual(pet, { id: pet.id, name, categoryId: 7, status: 'available' })
  assert.equal(res.headers.location, `/v1/pets/${pet.id}`)
  return pet
}

/** Every pet answered with 201 is listed exactly as answered, and nothing else is. */
async function assertAllListed(
  service: StartedService,
  key: string,
  created: Pet[],
): Promise<void> {
  const listed = await listAllPets(service, key)
  const byId = (a: Pet, b: Pet) => a.id - b.id
  assert.deepEqual(listed, [...created].sort(byId))
}

/** Waits until the workers have started, then gives their pids (two, none of them the primary). */
async function workerPids(service: StartedService, count: number): Promise<number[]> {
  await service.waitFor((out) => countOf(out, '"msg":"worker listening"') >= count)
  const pids = listeningWorkerPids(service.logLines())
  assert.equal(new Set(pids).size, count, `workers: ${pids}`)
  assert.ok(!pids.includes(service.pid))
  return pids
}

forStore('sqlite', () => {
  describe('serve --workers on SQLite', () => {
    test('PORT=0: one bootstrap key, one port, requests spread over both workers, all kept, metrics summed', {
      timeout: 60_000,
    }, async (t) => {
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      const service = await h.start(['--workers', '2'], { PETSTORE_METRICS_PORT: '0' })
      // The metrics line is a write of its own after the listening line: wait for it too.
      await service.waitFor(/^petstore metrics on /m)
      const out = service.stdout()
      // The primary made the one key; the output, not a terminal, names only its file.
      assert.equal(out.match(ANY_KEY), null, out)
      assert.equal(out.split('no API key existed').length, 2, out)
      const key = bootstrapKey(h.dir)
      const listening = out.match(/^petstore listening on .*$/gm)
      assert.deepEqual(listening, [
        `petstore listening on http://127.0.0.1:${service.port} (store: sqlite, workers: 2)`,
      ])
      const metricsUrl = /^petstore metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(
        out,
      )![1]!
      const workers = await workerPids(service, 2)

      // 16 clients at once, each alternating creates and list pages, every request on a new connection.
      const created: Pet[] = []
      let lists = 0
      await Promise.all(
        Array.from({ length: 16 }, async (_, c) => {
          for (let i = 0; i < 12; i++) {
            if (i % 2 === 0) {
              created.push(await createPet(service.port, key, `client-${c}-pet-${i}`))
            } else {
              const res = await call(service.port, { path: '/v1/pets?limit=5', key })
              assert.equal(res.status, 200, res.body)
              assert.ok((JSON.parse(res.body) as Pet[]).length <= 5)
              lists++
            }
          }
        }),
      )
      assert.equal(created.length, 96)
      assert.equal(new Set(created.map((p) => p.id)).size, 96, 'ids are unique')

      // The primary asks every worker for its figures at each scrape and adds them up.
      const scrape = await fetch(metricsUrl)
      assert.equal(scrape.status, 200)
      const metrics = await scrape.text()
      assert.match(
        metrics,
        /^petstore_http_requests_total\{operation="createPet",method="POST",status="201"\} 96$/m,
      )
      assert.match(
        metrics,
        new RegExp(
          `^petstore_http_requests_total\\{operation="listPets",method="GET",status="200"\\} ${lists}$`,
          'm',
        ),
      )

      await assertAllListed(service, key, created)

      // Both workers answered requests, and only workers did.
      await service.waitFor((text) => countOf(text, '"msg":"request completed"') >= 96 + lists)
      const served = requestsByPid(service.logLines())
      assert.deepEqual([...served.keys()].sort(), [...workers].sort(), JSON.stringify([...served]))

      service.child.kill('SIGTERM')
      assert.deepEqual(await service.exited, { code: 0, signal: null })
      assert.equal(service.stderr(), '')
    })

    test('SIGTERM drains every worker: readiness 503, an upload in flight gets 201, exit 0', {
      timeout: 45_000,
    }, async (t) => {
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      // Long enough for the readiness probe below to be answered before the listeners close.
      const service = await h.start(['--workers', '2'], {
        PETSTORE_API_KEYS: KEY,
        PETSTORE_DRAIN_DELAY: '2s',
        PETSTORE_SHUTDOWN_TIMEOUT: '60s',
      })
      const workers = await workerPids(service, 2)

      const probe = await openConnection(t, service.port)
      assert.equal((await readiness(probe)).status, 200)

      const body = '{"name":"Drained","categoryId":9223372036854775807,"status":"pending"}'
      const create = await halfSentCreate(t, service.port, KEY, body)

      service.child.kill('SIGTERM')
      await service.waitFor((out) => countOf(out, '"msg":"draining before exit"') >= 2)
      const stopping = service.logLines().filter((l) => l.msg === 'stopping workers')
      assert.deepEqual(
        stopping.map((l) => [l.pid, l.signal, l.workers]),
        [[service.pid, 'SIGTERM', 2]],
      )

      assertDraining(await readiness(probe))

      // Every worker has closed its listener, so the primary has closed the shared port.
      await listenerClosed(service.port)
      create.rest()
      const created = await create.upload.next()
      assert.equal(created.status, 201, created.body)
      // It began before the listener closed; once answered, its idle connection is closed at once
      // (with the 60 s shutdown timeout, waiting for that would outlast the test's own timeout).
      await create.upload.closed
      assert.equal(
        created.body,
        `{"id":1,"name":"Drained","categoryId":9223372036854775807,"status":"pending"}`,
      )

      assert.deepEqual(await service.exited, { code: 0, signal: null })
      assert.equal(service.stderr(), '')
      for (const pid of workers) assert.equal(isRunning(pid), false, `worker ${pid} ended`)
      const last = service.logLines().at(-1)!
      assert.deepEqual([last.pid, last.msg, last.exitCode], [service.pid, 'all workers stopped', 0])

      const restarted = await h.start([], { PETSTORE_API_KEYS: KEY })
      const res = await call(restarted.port, { path: '/v1/pets', key: KEY })
      assert.equal(res.body, `[${created.body}]`)
    })

    test('a worker killed with SIGKILL is replaced, and the service keeps answering', {
      timeout: 60_000,
    }, async (t) => {
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      // The setting alone asks for workers here.
      const service = await h.start([], { PETSTORE_WORKERS: '2', PETSTORE_API_KEYS: KEY })
      assert.match(service.stdout(), /\(store: sqlite, workers: 2\)$/m)
      const [victim, survivor] = await workerPids(service, 2)
      const created: Pet[] = []
      for (let i = 0; i < 4; i++) created.push(await createPet(service.port, KEY, `before-${i}`))

      process.kill(victim!, 'SIGKILL')
      await service.waitFor(/"msg":"worker exited unexpectedly; starting another"/)
      const death = service.logLines().find((l) => l.msg.startsWith('worker exited unexpectedly'))!
      const victimSlot = service.logLines().find((l) => l.workerPid === victim)!.worker
      assert.deepEqual(
        [death.pid, death.worker, death.workerPid, death.code, death.signal, death.restartInMs],
        [service.pid, victimSlot, victim, null, 'SIGKILL', 100],
      )
      // The primary has taken the dead worker out of its rotation: the survivor takes everything.
      for (let i = 0; i < 4; i++) created.push(await createPet(service.port, KEY, `meanwhile-${i}`))

      const [, , replacement] = await workerPids(service, 3)
      assert.ok(replacement !== victim && replacement !== survivor)
      const replaced = service
        .logLines()
        .filter((l) => l.msg === 'worker listening')
        .at(-1)!
      assert.equal(replaced.worker, victimSlot)
      for (let i = 0; i < 8; i++) {
        created.push(
          await createPet(service.port, KEY, `after-${i}`, { 'x-request-id': `after-${i}` }),
        )
      }
      assert.equal(isRunning(victim!), false)
      await service.waitFor((text) => countOf(text, '"requestId":"after-') === 8)
      const after = service.logLines().filter((l) => String(l.requestId).startsWith('after-'))
      assert.deepEqual(
        [...new Set(after.map((l) => l.pid))].sort(),
        [survivor, replacement].sort(),
        'the survivor and the new worker serve',
      )

      await assertAllListed(service, KEY, created)
      service.child.kill('SIGTERM')
      assert.deepEqual(await service.exited, { code: 0, signal: null })
      assert.equal(isRunning(replacement!), false)
      assert.equal(isRunning(survivor!), false)
    })

    test('--workers 1 overrides PETSTORE_WORKERS and serves from the one process, as before', {
      timeout: 30_000,
    }, async (t) => {
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      const service = await h.start(['--workers', '1'], {
        PETSTORE_WORKERS: '4',
        PETSTORE_API_KEYS: KEY,
      })
      assert.deepEqual(service.stdout().match(/^petstore listening on .*$/gm), [
        `petstore listening on http://127.0.0.1:${service.port} (store: sqlite)`,
      ])
      await createPet(service.port, KEY, 'alone')
      await service.waitFor(/"msg":"request completed"/)
      assert.deepEqual([...requestsByPid(service.logLines())], [[service.pid, 1]])
      assert.equal(service.logLines().filter((l) => l.msg === 'worker listening').length, 0)
      service.child.kill('SIGTERM')
      assert.deepEqual(await service.exited, { code: 0, signal: null })
    })

    test('rate limits count per worker in memory: each worker has the whole budget', {
      timeout: 30_000,
    }, async (t) => {
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      const service = await h.start(['--workers', '2'], { PETSTORE_RATE_LIMIT_MAX: '3' })
      const key = bootstrapKey(h.dir)
      const statuses = await sequentialLists(service.port, key, 10)
      await service.waitFor((out) => countOf(out, '"msg":"request completed"') >= 10)
      // Each worker answers its first 3 and refuses the rest, whatever share of the 10 it was given.
      const byPid = new Map<number, number[]>()
      for (const line of service.logLines()) {
        if (line.msg !== 'request completed') continue
        byPid.set(line.pid, [...(byPid.get(line.pid) ?? []), line.status as number])
      }
      assert.equal(byPid.size, 2, JSON.stringify([...byPid]))
      for (const [pid, seen] of byPid) {
        const allowed = Math.min(3, seen.length)
        const expected = [...Array(allowed).fill(200), ...Array(seen.length - allowed).fill(429)]
        assert.deepEqual(seen, expected, `worker ${pid}`)
      }
      const allowedTotal = [...byPid.values()].reduce((n, s) => n + Math.min(3, s.length), 0)
      assert.equal(statuses.filter((s) => s === 200).length, allowedTotal)
      assert.ok(allowedTotal > 3, 'two budgets of 3')
    })

    test('rate limits are one budget across workers with PETSTORE_RATE_LIMIT_STORE=redis', {
      timeout: 30_000,
    }, async (t) => {
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      // The bootstrap key's id is new, so its counter in the shared Redis is this test's alone.
      const service = await h.start(['--workers', '2'], {
        PETSTORE_RATE_LIMIT_MAX: '3',
        PETSTORE_RATE_LIMIT_STORE: 'redis',
        PETSTORE_REDIS_URL: 'redis://127.0.0.1:6379',
      })
      const key = bootstrapKey(h.dir)
      const statuses = await sequentialLists(service.port, key, 10)
      assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429])
      await service.waitFor((out) => countOf(out, '"msg":"request completed"') >= 10)
      const served = requestsByPid(service.logLines())
      assert.equal(served.size, 2, 'both workers answered')
      assert.equal(service.stderr(), '')
    })

    test('a worker that cannot start stops the others, and the primary exits with its status', {
      timeout: 30_000,
    }, async (t) => {
      const taken = createServer()
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
      t.after(() => taken.close())
      const port = (taken.address() as { port: number }).port
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      const res = await h.run(['serve', '--workers', '2'], {
        PORT: String(port),
        PETSTORE_API_KEYS: KEY,
      })
      assert.equal(res.code, 1, res.stderr)
      assert.match(
        res.stderr,
        /^petstore: the API cannot listen on 127\.0\.0\.1:(\d+) \(bind EADDRINUSE 127\.0\.0\.1:\1\); set PORT to another port$/m,
      )
      assert.doesNotMatch(res.stdout, /petstore listening/)
      const failed = parseLogLines(res.stdout).filter((l) => l.msg.startsWith('worker failed'))
      assert.ok(failed.length >= 1)
      for (const pid of listeningWorkerPids(parseLogLines(res.stdout))) {
        assert.equal(isRunning(pid), false)
      }
    })

    test('bad worker counts exit 2 and say what is accepted', { timeout: 30_000 }, async (t) => {
      const h = workspace(t, JSON_LOGS_NO_LIMIT)
      const flags = ['0', '65', 'two', '1.5', '']
      const settings = ['0', '65', 'many']
      const [flagged, set] = await Promise.all([
        Promise.all(flags.map((n) => h.run(['serve', '--workers', n]))),
        Promise.all(settings.map((n) => h.run(['serve'], { PETSTORE_WORKERS: n }))),
      ])
      for (const [i, n] of flags.entries()) {
        const res = flagged[i]!
        assert.equal(res.code, 2, n)
        assert.equal(res.stdout, '', n)
        assert.equal(
          res.stderr.split('\n')[0],
          `error: option '--workers <n>' argument '${n}' is invalid. expected a whole number from 1 to 64`,
        )
      }
      for (const [i, n] of settings.entries()) {
        assert.deepEqual(set[i], {
          code: 2,
          signal: null,
          stdout: '',
          stderr: `petstore: invalid configuration:\n  PETSTORE_WORKERS="${n}" is invalid: expected an integer from 1 to 64\n`,
        })
      }
      assert.equal(existsSync(join(h.dir, 'petstore.db')), false)
    })
  })

  /** `count` listPets calls one after the other, each on a new connection; their statuses. */
  async function sequentialLists(port: number, key: string, count: number): Promise<number[]> {
    const statuses: number[] = []
    for (let i = 0; i < count; i++)
      statuses.push((await call(port, { path: '/v1/pets', key })).status)
    return statuses
  }
})
