// The Prometheus metrics of one app, in a registry of its own (never prom-client's global one),
// so every app built in a test starts from zero and nothing is shared between instances.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { Store } from '../storage/store.js'

/** The calls of one deprecated operation by one API key, as src/pets/deprecation.ts counts them. */
export interface DeprecatedCalls {
  operation: string
  apiKeyName: string
  count: number
}

export type RateLimitPolicy = 'default' | 'auth-failures'

export interface RequestLabels {
  /** The route's operation name; `unknown` when no route matched (404), never a URL. */
  operation: string
  method: string
  status: number
}

/** Request latencies of an in-process catalogue: mostly well under 10 ms, tail up to seconds. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const REQUEST_LABELS = ['operation', 'method', 'status'] as const
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]

export class Metrics {
  readonly registry = new Registry()
  private store: Store | null = null

  private readonly requests = new Counter({
    name: 'petstore_http_requests_total',
    help: 'HTTP requests answered by the API, by operation, method and status.',
    labelNames: REQUEST_LABELS,
    registers: [this.registry],
  })

  private readonly durations = new Histogram({
    name: 'petstore_http_request_duration_seconds',
    help: 'Time from receiving an API request to sending its response, by operation, method and status.',
    labelNames: REQUEST_LABELS,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  })

  private readonly rateLimitRejections = new Counter({
    name: 'petstore_rate_limit_rejections_total',
    help: 'Requests refused with 429, by rate-limit policy (default: per API key; auth-failures: per client address).',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  })

  private readonly refusedConnections = new Counter({
    name: 'petstore_http_connections_refused_total',
    help: 'API connections closed as soon as accepted because the process is out of file descriptors (past those it keeps spare, or EMFILE/ENFILE).',
    registers: [this.registry],
  })

  private readonly batchSizes = new Histogram({
    name: 'petstore_storage_write_batch_size',
    help: 'Writes committed together in one transaction by group commit.',
    buckets: BATCH_SIZE_BUCKETS,
    registers: [this.registry],
  })

  /**
   * The calls to deprecated operations, read at a scrape from the counter that already counts them
   * for the log (src/pets/deprecation.ts), rather than a labelled inc() on every getPet.
   */
  private deprecatedCalls: () => Iterable<DeprecatedCalls> = () => []

  constructor(opts: { processMetrics?: boolean } = {}) {
    const stats = () => this.store?.stats() ?? null
    const deprecatedCalls = () => this.deprecatedCalls()
    new Counter({
      name: 'petstore_deprecated_calls_total',
      help: 'Calls to deprecated operations, by operation and the name of the calling API key.',
      labelNames: ['operation', 'api_key_name'] as const,
      registers: [this.registry],
      collect() {
        this.reset()
        for (const c of deprecatedCalls()) {
          this.inc({ operation: c.operation, api_key_name: c.apiKeyName }, c.count)
        }
      },
    })
    new Gauge({
      name: 'petstore_storage_connections',
      help: 'Storage connections in use and idle, and requests waiting for one.',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const s = stats()
        if (s === null) return
        this.set({ state: 'in_use' }, s.connections.inUse)
        this.set({ state: 'idle' }, s.connections.idle)
        this.set({ state: 'waiting' }, s.connections.waiting)
      },
    })
    new Gauge({
      name: 'petstore_storage_queued_writes',
      help: 'Writes waiting for the next group commit.',
      registers: [this.registry],
      collect() {
        const s = stats()
        if (s !== null) this.set(s.queuedWrites)
      },
    })
    // CPU, memory, event-loop lag, GC, handles. They install process-wide observers that are never
    // removed, so only a real server turns them on, not every app a test builds.
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry })
  }

  /** Reports the store's connections and queue at each scrape, and each group commit's size. */
  watchStore(store: Store): void {
    this.store = store
    store.onWriteBatch((size) => this.batchSizes.observe(size))
  }

  requestCompleted(labels: RequestLabels, seconds: number): void {
    this.requests.inc(labels)
    this.durations.observe(labels, seconds)
  }

  /** Reports these counts of calls to deprecated operations at each scrape. */
  watchDeprecatedCalls(counts: () => Iterable<DeprecatedCalls>): void {
    this.deprecatedCalls = counts
  }

  rateLimitRejected(policy: RateLimitPolicy): void {
    this.rateLimitRejections.inc({ policy })
  }

  connectionRefused(): void {
    this.refusedConnections.inc()
  }
}
