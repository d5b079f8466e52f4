import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client'
import { RequestMetrics } from '../../src/observability/request-metrics.js'
import { storeIndependent } from '../support/stores.js'

function metrics() {
  const registry = new Registry()
  const requests = new RequestMetrics(
    [0.01, 0.1],
    { count: 'requests_total', duration: 'request_seconds' },
    { count: 'Requests.', duration: 'Latency.' },
    registry,
  )
  const counts = async () =>
    (await registry.getMetricsAsJSON())
      .find((m) => m.name === 'requests_total')!
      .values.map((v) => `${v.labels.operation} ${v.labels.method} ${v.labels.status}: ${v.value}`)
  return { registry, requests, counts }
}

storeIndependent(() => {
  test('requests are counted per label set, whichever label set came before', async () => {
    const { requests, counts } = metrics()
    requests.record('getPet', 'GET', 200, 0.001)
    requests.record('getPet', 'GET', 200, 0.001)
    requests.record('getPet', 'GET', 404, 0.001)
    requests.record('listPets', 'GET', 200, 0.05)
    requests.record('getPet', 'GET', 200, 0.2)
    requests.record(`get${'Pet'}`, 'GET', 200, 0.001)
    assert.deepEqual(await counts(), [
      'getPet GET 200: 4',
      'getPet GET 404: 1',
      'listPets GET 200: 1',
    ])
  })

  test('after a reset, counting starts again from nothing for the same labels', async () => {
    const { registry, requests, counts } = metrics()
    requests.record('getPet', 'GET', 200, 0.001)
    registry.resetMetrics()
    assert.deepEqual(await counts(), [])
    requests.record('getPet', 'GET', 200, 0.001)
    assert.deepEqual(await counts(), ['getPet GET 200: 1'])
  })

  test("the exposition is byte for byte what prom-client's own Counter and Histogram write", async () => {
    const { registry, requests } = metrics()
    const reference = new Registry()
    const labelNames = ['operation', 'method', 'status'] as const
    const counter = new Counter({
      name: 'requests_total',
      help: 'Requests.',
      labelNames,
      registers: [reference],
    })
    const histogram = new Histogram({
      name: 'request_seconds',
      help: 'Latency.',
      buckets: [0.01, 0.1],
      labelNames,
      registers: [reference],
    })
    const observations: [string, string, number, number][] = [
      ['getPet', 'GET', 200, 0.001],
      ['listPets', 'GET', 200, 0.05],
      ['getPet', 'GET', 404, 0.01],
      ['createPet', 'POST', 201, 0.5],
      ['getPet', 'GET', 200, 0.1],
    ]
    for (const [operation, method, status, seconds] of observations) {
      requests.record(operation, method, status, seconds)
      const labels = { operation, method, status: String(status) }
      counter.inc(labels)
      histogram.observe(labels, seconds)
    }
    assert.equal(await registry.metrics(), await reference.metrics())
    // Cluster workers' figures are summed as prom-client sums its own.
    const aggregated = (r: Registry) =>
      r.getMetricsAsJSON().then((m) => AggregatorRegistry.aggregate([m, m]).metrics())
    assert.equal(await aggregated(registry), await aggregated(reference))
  })
})
