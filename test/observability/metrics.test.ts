// Prometheus metrics, scraped for real: a `petstore serve` process answers some requests, then its
// metrics listener is scraped and the text exposition checked line by line.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { describe, type TestContext, test } from 'node:test'
import { configWith } from '../../src/config.js'
import { Metrics } from '../../src/observability/metrics.js'
import { LISTENING_BANNER, METRICS_BANNER, startServer } from '../../src/server.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { spawnService, startService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { tempDir } from '../support/workspace.js'

const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8'
const DURATION_BUCKETS = [
  '0.001',
  '0.0025',
  '0.005',
  '0.01',
  '0.025',
  '0.05',
  '0.1',
  '0.25',
  '0.5',
  '1',
  '2.5',
  '5',
  '10',
  '+Inf',
]

/** `keys create --name <name>` in its own process; returns the key from its last line. */
async function createKey(t: TestContext, dir: string, name: string): Promise<string> {
  const created = spawnService(t, { args: ['keys', 'create', '--name', name], cwd: dir })
  assert.deepEqual(await created.exited, { code: 0, signal: null }, created.stderr())
  return created.stdout().trimEnd().split('\n').at(-1)!
}

/** Starts `serve` with metrics on and waits for the lines saying where the API and the metrics listen. */
async function serve(t: TestContext, dir: string, env: Record<string, string>) {
  const server = await startService(t, { cwd: dir, env })
  return { ...server, metricsUrl: server.metricsUrl! }
}

/** The samples of one metric family (name, name_bucket, ...), in exposition order. */
function samples(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
}

storeIndependent(() => {
  describe('metrics of a running service', () => {
    test('counts requests, deprecated calls, rate limits and storage use, on its own loopback port', async (t) => {
      const dir = tempDir(t, 'petstore-metrics-')
      const key = await createKey(t, dir, 'alice-app')
      const server = await serve(t, dir, {
        PETSTORE_METRICS_PORT: '0',
        PETSTORE_RATE_LIMIT_MAX: '4',
        PETSTORE_AUTH_FAILURE_LIMIT_MAX: '1',
      })
      // Loopback unless PETSTORE_METRICS_HOST says otherwise (it is unset here).
      assert.match(server.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
      assert.notEqual(new URL(server.metricsUrl).port, new URL(server.origin).port)

      const call = async (path: string, init: RequestInit = {}) => {
        const res = await fetch(`${server.origin}${path}`, init)
        await res.arrayBuffer()
        return res.status
      }
      const bearer = { authorization: `Bearer ${key}` }
      assert.equal(await call('/v1/pets', { headers: bearer }), 200)
      assert.equal(
        await call('/v1/pets', {
          method: 'POST',
          headers: { ...bearer, 'content-type': 'application/json' },
          body: '{"name":"Rex","categoryId":7}',
        }),
        201,
      )
      assert.equal(await call('/v1/pets/1', { headers: bearer }), 200)
      assert.equal(await call('/v1/pets/1', { headers: bearer }), 200)
      // The fifth request of the key exceeds PETSTORE_RATE_LIMIT_MAX=4.
      assert.equal(await call('/v1/pets', { headers: bearer }), 429)
      // One failed authentication is allowed per window, the second is refused.
      assert.equal(await call('/v1/pets'), 401)
      assert.equal(await call('/v1/pets', { headers: { authorization: 'Bearer wrong-key' } }), 429)
      // The API port does not serve the metrics.
      const onApiPort = await fetch(`${server.origin}/metrics`)
      assert.equal(onApiPort.status, 404)
      assert.deepEqual(await onApiPort.json(), {
        code: 'not_found',
        message: 'no resource at /metrics',
        status: 404,
      })
      assert.equal(await call('/healthz'), 200)

      const scrape = await fetch(server.metricsUrl)
      assert.equal(scrape.status, 200)
      assert.equal(scrape.headers.get('content-type'), PROMETHEUS_TEXT)
      const text = await scrape.text()

      assert.deepEqual(samples(text, 'petstore_http_requests_total'), [
        'petstore_http_requests_total{operation="listPets",method="GET",status="200"} 1',
        'petstore_http_requests_total{operation="createPet",method="POST",status="201"} 1',
        'petstore_http_requests_total{operation="getPet",method="GET",status="200"} 2',
        'petstore_http_requests_total{operation="listPets",method="GET",status="429"} 2',
        'petstore_http_requests_total{operation="listPets",method="GET",status="401"} 1',
        'petstore_http_requests_total{operation="unknown",method="GET",status="404"} 1',
        'petstore_http_requests_total{operation="healthz",method="GET",status="200"} 1',
      ])
      assert.ok(text.includes('# TYPE petstore_http_requests_total counter\n'))

      // The histogram has every bucket for each label set, cumulative, ending at the count.
      assert.ok(text.includes('# TYPE petstore_http_request_duration_seconds histogram\n'))
      const labelSets: [string, number][] = [
        ['operation="listPets",method="GET",status="200"', 1],
        ['operation="createPet",method="POST",status="201"', 1],
        ['operation="getPet",method="GET",status="200"', 2],
        ['operation="listPets",method="GET",status="429"', 2],
        ['operation="listPets",method="GET",status="401"', 1],
        ['operation="unknown",method="GET",status="404"', 1],
        ['operation="healthz",method="GET",status="200"', 1],
      ]
      const bucketLines = samples(text, 'petstore_http_request_duration_seconds_bucket')
      assert.equal(bucketLines.length, labelSets.length * DURATION_BUCKETS.length)
      for (const [labels, count] of labelSets) {
        const buckets = bucketLines
          .map((line) => new RegExp(`^[^{]+\\{le="([^"]+)",${labels}\\} (\\d+)$`).exec(line))
          .filter((m) => m !== null)
          .map((m) => [m[1]!, Number(m[2])] as const)
        assert.deepEqual(
          buckets.map(([le]) => le),
          DURATION_BUCKETS,
          labels,
        )
        const counts = buckets.map(([, n]) => n)
        assert.ok(
          counts.every((n, i) => i === 0 || n >= counts[i - 1]!),
          `${labels}: ${counts}`,
        )
        assert.equal(counts.at(-1), count, labels)
        const sum = new RegExp(
          `^petstore_http_request_duration_seconds_sum\\{${labels}\\} (\\S+)$`,
          'm',
        )
        const seconds = Number(sum.exec(text)?.[1])
        assert.ok(seconds > 0 && seconds < 60, `${labels}: sum ${seconds}`)
      }
      assert.deepEqual(
        samples(text, 'petstore_http_request_duration_seconds_count'),
        labelSets.map(([l, n]) => `petstore_http_request_duration_seconds_count{${l}} ${n}`),
      )

      assert.deepEqual(samples(text, 'petstore_deprecated_calls_total'), [
        'petstore_deprecated_calls_total{operation="getPet",api_key_name="alice-app"} 2',
      ])
      assert.deepEqual(samples(text, 'petstore_rate_limit_rejections_total'), [
        'petstore_rate_limit_rejections_total{policy="default"} 1',
        'petstore_rate_limit_rejections_total{policy="auth-failures"} 1',
      ])
      assert.deepEqual(samples(text, 'petstore_storage_connections'), [
        // The main connection and the writer thread's (started by the creates above).
        'petstore_storage_connections{state="in_use"} 2',
        'petstore_storage_connections{state="idle"} 0',
        'petstore_storage_connections{state="waiting"} 0',
      ])
      assert.deepEqual(samples(text, 'petstore_storage_queued_writes'), [
        'petstore_storage_queued_writes 0',
      ])
      // The one create was one group commit of one write.
      assert.deepEqual(samples(text, 'petstore_storage_write_batch_size_count'), [
        'petstore_storage_write_batch_size_count 1',
      ])
      assert.deepEqual(samples(text, 'petstore_storage_write_batch_size_sum'), [
        'petstore_storage_write_batch_size_sum 1',
      ])

      // Process metrics of prom-client's default set.
      for (const family of [
        '# TYPE process_cpu_user_seconds_total counter',
        '# TYPE process_resident_memory_bytes gauge',
        '# TYPE process_start_time_seconds gauge',
        '# TYPE nodejs_eventloop_lag_seconds gauge',
        '# TYPE nodejs_heap_size_used_bytes gauge',
      ]) {
        assert.ok(text.includes(`${family}\n`), family)
      }
      const [started] = samples(text, 'process_start_time_seconds')
      assert.match(String(started), /^process_start_time_seconds \d+$/)

      // Scraping is not a request of the API: the counts stay as they were.
      const again = await (await fetch(server.metricsUrl)).text()
      assert.deepEqual(
        samples(again, 'petstore_http_requests_total'),
        samples(text, 'petstore_http_requests_total'),
      )

      server.child.kill('SIGTERM')
      assert.deepEqual(await server.exited, { code: 0, signal: null })
    })

    test('the metrics listener serves only GET /metrics', async (t) => {
      const dir = tempDir(t, 'petstore-metrics-')
      const server = await serve(t, dir, {
        PETSTORE_METRICS_PORT: '0',
        PETSTORE_API_KEYS: 'a-configured-key-for-tests',
      })
      const base = server.metricsUrl.replace(/\/metrics$/, '')
      for (const path of ['/', '/v1/pets', '/metrics/x', '/healthz']) {
        const res = await fetch(`${base}${path}`)
        assert.equal(res.status, 404, path)
        assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
        assert.deepEqual(await res.json(), {
          code: 'not_found',
          message: 'only /metrics is served here',
          status: 404,
        })
      }
      const post = await fetch(server.metricsUrl, { method: 'POST' })
      assert.equal(post.status, 405)
      assert.equal(post.headers.get('allow'), 'GET')
      assert.deepEqual(await post.json(), {
        code: 'method_not_allowed',
        message: 'only GET is allowed on /metrics',
        status: 405,
      })
      // A query string does not change what is served.
      const withQuery = await fetch(`${server.metricsUrl}?name[]=up`)
      assert.equal(withQuery.status, 200)
      assert.equal(withQuery.headers.get('content-type'), PROMETHEUS_TEXT)
    })
  })

  describe('metrics listener lifecycle', () => {
    const settings = (dir: string) =>
      configWith({
        port: 0,
        databaseUrl: `sqlite:${join(dir, 'petstore.db')}`,
        apiKeys: ['a-configured-key-for-tests'],
        logLevel: 'silent',
        drainDelayMs: 0,
        metricsPort: 0,
      })
    const sink = () => {
      const lines: string[] = []
      const stream = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk))
          done()
        },
      })
      return { lines, stream }
    }

    test('it binds loopback by default and closes with the server', async (t) => {
      const dir = tempDir(t, 'petstore-metrics-')
      const out = sink()
      const server = await startServer(settings(dir), out.stream)
      t.after(() => server.stop())
      assert.equal(configWith().metricsHost, '127.0.0.1')
      assert.match(String(server.metricsUrl), /^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
      assert.deepEqual(out.lines, [
        `${LISTENING_BANNER} ${server.address} (store: sqlite)\n`,
        `${METRICS_BANNER} ${server.metricsUrl}\n`,
      ])
      assert.equal((await fetch(server.metricsUrl!)).status, 200)

      await server.stop()
      await assert.rejects(fetch(server.metricsUrl!), TypeError)
      await assert.rejects(fetch(`${server.address}/healthz`), TypeError)
    })

    test('PETSTORE_METRICS_PORT=off starts no listener', async (t) => {
      const dir = tempDir(t, 'petstore-metrics-')
      const out = sink()
      const server = await startServer({ ...settings(dir), metricsPort: null }, out.stream)
      t.after(() => server.stop())
      assert.equal(server.metricsUrl, null)
      assert.deepEqual(out.lines, [`${LISTENING_BANNER} ${server.address} (store: sqlite)\n`])
    })

    test('a taken metrics port stops the start with a message, and nothing is left listening', async (t) => {
      const dir = tempDir(t, 'petstore-metrics-')
      const first = await startServer(settings(dir), sink().stream)
      t.after(() => first.stop())
      const port = Number(new URL(first.metricsUrl!).port)
      const out = sink()
      await assert.rejects(startServer({ ...settings(dir), metricsPort: port }, out.stream), {
        message: `metrics cannot listen on 127.0.0.1:${port} (listen EADDRINUSE: address already in use 127.0.0.1:${port}); set PETSTORE_METRICS_PORT to another port or off`,
      })
      assert.deepEqual(out.lines, [])
    })

    test('a taken API port stops the start with a message naming PORT', async (t) => {
      const dir = tempDir(t, 'petstore-metrics-')
      const first = await startServer(settings(dir), sink().stream)
      t.after(() => first.stop())
      const port = Number(new URL(first.address).port)
      const out = sink()
      await assert.rejects(startServer({ ...settings(dir), port, metricsPort: null }, out.stream), {
        message: `the API cannot listen on 127.0.0.1:${port} (listen EADDRINUSE: address already in use 127.0.0.1:${port}); set PORT to another port`,
      })
      assert.deepEqual(out.lines, [])
    })
  })

  describe('storage figures', () => {
    test('queued writes and group-commit batch sizes come from the SQLite store', async (t) => {
      const dir = tempDir(t, 'petstore-metrics-')
      const store = await openSqliteStore(join(dir, 'petstore.db'))
      t.after(() => store.close())
      const metrics = new Metrics({ processMetrics: false })
      metrics.watchStore(store)

      // Three creates in one turn of the event loop are one commit.
      const creates = [1, 2, 3].map((n) => store.createPet({ name: `pet-${n}`, categoryId: 1n }))
      // The main connection; the writer thread starts with the first commit.
      assert.deepEqual(store.stats(), {
        connections: { inUse: 1, idle: 0, waiting: 0 },
        queuedWrites: 3,
      })
      assert.equal(
        samples(await metrics.registry.metrics(), 'petstore_storage_queued_writes')[0],
        'petstore_storage_queued_writes 3',
      )
      await Promise.all(creates)
      await store.createPet({ name: 'pet-4', categoryId: 1n })

      const text = await metrics.registry.metrics()
      assert.deepEqual(samples(text, 'petstore_storage_write_batch_size_bucket'), [
        'petstore_storage_write_batch_size_bucket{le="1"} 1',
        'petstore_storage_write_batch_size_bucket{le="2"} 1',
        'petstore_storage_write_batch_size_bucket{le="4"} 2',
        'petstore_storage_write_batch_size_bucket{le="8"} 2',
        'petstore_storage_write_batch_size_bucket{le="16"} 2',
        'petstore_storage_write_batch_size_bucket{le="32"} 2',
        'petstore_storage_write_batch_size_bucket{le="64"} 2',
        'petstore_storage_write_batch_size_bucket{le="128"} 2',
        'petstore_storage_write_batch_size_bucket{le="256"} 2',
        'petstore_storage_write_batch_size_bucket{le="512"} 2',
        'petstore_storage_write_batch_size_bucket{le="+Inf"} 2',
      ])
      assert.deepEqual(samples(text, 'petstore_storage_write_batch_size_sum'), [
        'petstore_storage_write_batch_size_sum 4',
      ])
      assert.deepEqual(samples(text, 'petstore_storage_queued_writes'), [
        'petstore_storage_queued_writes 0',
      ])
      // An app built without process metrics has none: tests build many apps in one process.
      assert.equal(text.includes('process_cpu_user_seconds_total'), false)

      await store.close()
      assert.deepEqual(samples(await metrics.registry.metrics(), 'petstore_storage_connections'), [
        'petstore_storage_connections{state="in_use"} 0',
        'petstore_storage_connections{state="idle"} 0',
        'petstore_storage_connections{state="waiting"} 0',
      ])
    })

    test('each app counts into its own registry', async () => {
      const a = new Metrics({ processMetrics: false })
      const b = new Metrics({ processMetrics: false })
      a.rateLimitRejected('default')
      assert.deepEqual(
        samples(await a.registry.metrics(), 'petstore_rate_limit_rejections_total'),
        ['petstore_rate_limit_rejections_total{policy="default"} 1'],
      )
      assert.deepEqual(
        samples(await b.registry.metrics(), 'petstore_rate_limit_rejections_total'),
        [],
      )
    })
  })
})
