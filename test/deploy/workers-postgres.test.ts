// `petstore serve --workers 2` on PostgreSQL, as real processes on PORT=0: the primary migrates the
// fresh schema and makes the one bootstrap key, both workers serve concurrent creates and lists,
// every 201 is listed afterwards, an Idempotency-Key replays through either worker, and SIGTERM
// stops every worker and the primary with status 0.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { call, listAllPets, type Pet } from '../support/api.js'
import { freshPostgresUrl } from '../support/postgres.js'
import { bootstrapKey, isRunning, listeningWorkerPids } from '../support/process.js'
import { forStore } from '../support/stores.js'
import { JSON_LOGS_NO_LIMIT, workspace } from '../support/workspace.js'

const ANY_KEY = /pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}/g

forStore('postgres', () => {
  test('serve --workers 2 on PostgreSQL: one key, both workers serve, every 201 kept, exit 0', {
    timeout: 60_000,
  }, async (t) => {
    // The workspace first, so its processes are stopped before the schema is dropped.
    const h = workspace(t, JSON_LOGS_NO_LIMIT)
    const databaseUrl = await freshPostgresUrl(t)
    const service = await h.start(['--workers', '2'], {
      PETSTORE_DATABASE_URL: databaseUrl,
      PETSTORE_DATABASE_POOL_SIZE: '4',
    })
    const out = service.stdout()
    // On PostgreSQL the key goes to the working directory; the output names only the file.
    assert.equal(out.match(ANY_KEY), null, out)
    assert.equal(out.split('no API key existed').length, 2, out)
    const key = bootstrapKey(h.dir)
    assert.deepEqual(out.match(/^petstore listening on .*$/gm), [
      `petstore listening on http://127.0.0.1:${service.port} (store: postgres, workers: 2)`,
    ])
    await service.waitFor((text) => text.split('"msg":"worker listening"').length > 2)
    const workers = listeningWorkerPids(service.logLines())
    assert.equal(new Set(workers).size, 2)

    const created: Pet[] = []
    await Promise.all(
      Array.from({ length: 12 }, async (_, c) => {
        for (let i = 0; i < 10; i++) {
          if (i % 2 === 0) {
            const name = `client-${c}-pet-${i}`
            const res = await call(service.port, {
              method: 'POST',
              path: '/v1/pets',
              key,
              body: `{"name":"${name}","categoryId":${c}}`,
            })
            assert.equal(res.status, 201, res.body)
            const pet = JSON.parse(res.body) as Pet
            assert.deepEqual(pet, { id: pet.id, name, categoryId: c })
            assert.equal(res.headers.location, `/v1/pets/${pet.id}`)
            created.push(pet)
          } else {
            const res = await call(service.port, { path: '/v1/pets?limit=7', key })
            assert.equal(res.status, 200, res.body)
          }
        }
      }),
    )
    assert.equal(new Set(created.map((p) => p.id)).size, 60, 'ids are unique')

    // The same Idempotency-Key four times, each on a new connection, so both workers see it.
    const replays = []
    for (let i = 0; i < 4; i++) {
      replays.push(
        await call(service.port, {
          method: 'POST',
          path: '/v1/pets',
          key,
          body: '{"name":"Once","categoryId":1}',
          headers: { 'idempotency-key': 'workers-replay-1' },
        }),
      )
    }
    const original = replays[0]!
    assert.equal(original.status, 201)
    assert.equal(original.headers['idempotent-replayed'], undefined)
    for (const replay of replays.slice(1)) {
      assert.equal(replay.status, 201)
      assert.equal(replay.body, original.body)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
    }
    created.push(JSON.parse(original.body) as Pet)

    // Every 201 is listed exactly as answered, once, and nothing else is.
    const listed = await listAllPets(service, key)
    assert.deepEqual(
      listed,
      created.sort((a, b) => a.id - b.id),
    )

    await service.waitFor((text) => text.split('"msg":"request completed"').length > 124)
    const served = new Set<number>()
    for (const line of service.logLines())
      if (line.msg === 'request completed') served.add(line.pid)
    assert.deepEqual([...served].sort(), [...workers].sort())

    service.child.kill('SIGTERM')
    assert.deepEqual(await service.exited, { code: 0, signal: null })
    assert.equal(service.stderr(), '')
    for (const pid of workers) assert.equal(isRunning(pid), false)
  })
})
