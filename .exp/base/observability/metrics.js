// The Prometheus metrics of one app, in a registry of its own (never prom-client's global one),
// so every app built in a test starts from zero and nothing is shared between instances.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
/** Request latencies of an in-process catalogue: mostly well under 10 ms, tail up to seconds. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
export class Metrics {
    registry = new Registry();
    store = null;
    requests = new Counter({
        name: 'petstore_http_requests_total',
        help: 'HTTP requests answered by the API, by operation, method and status.',
        labelNames: ['operation', 'method', 'status'],
        registers: [this.registry],
    });
    durations = new Histogram({
        name: 'petstore_http_request_duration_seconds',
        help: 'Time from receiving an API request to sending its response, by operation, method and status.',
        labelNames: ['operation', 'method', 'status'],
        buckets: DURATION_BUCKETS,
        registers: [this.registry],
    });
    deprecatedCalls = new Counter({
        name: 'petstore_deprecated_calls_total',
        help: 'Calls to deprecated operations, by operation and the name of the calling API key.',
        labelNames: ['operation', 'api_key_name'],
        registers: [this.registry],
    });
    rateLimitRejections = new Counter({
        name: 'petstore_rate_limit_rejections_total',
        help: 'Requests refused with 429, by rate-limit policy (default: per API key; auth-failures: per client address).',
        labelNames: ['policy'],
        registers: [this.registry],
    });
    batchSizes = new Histogram({
        name: 'petstore_storage_write_batch_size',
        help: 'Writes committed together in one transaction by group commit.',
        buckets: BATCH_SIZE_BUCKETS,
        registers: [this.registry],
    });
    requestSeries = new Map();
    constructor(opts = {}) {
        const stats = () => this.store?.stats?.() ?? null;
        new Gauge({
            name: 'petstore_storage_connections',
            help: 'Storage connections in use and idle, and requests waiting for one.',
            labelNames: ['state'],
            registers: [this.registry],
            collect() {
                const s = stats();
                if (s === null)
                    return;
                this.set({ state: 'in_use' }, s.connections.inUse);
                this.set({ state: 'idle' }, s.connections.idle);
                this.set({ state: 'waiting' }, s.connections.waiting);
            },
        });
        new Gauge({
            name: 'petstore_storage_queued_writes',
            help: 'Writes waiting for the next group commit.',
            registers: [this.registry],
            collect() {
                const s = stats();
                if (s !== null)
                    this.set(s.queuedWrites);
            },
        });
        // CPU, memory, event-loop lag, GC, handles. They install process-wide observers that are never
        // removed, so only a real server turns them on, not every app a test builds.
        if (opts.processMetrics ?? true)
            collectDefaultMetrics({ register: this.registry });
    }
    /** Reports the store's connections and queue at each scrape, and each group commit's size. */
    watchStore(store) {
        this.store = store;
        store.onWriteBatch?.((size) => this.batchSizes.observe(size));
    }
    requestCompleted({ operation, method, status }, seconds) {
        // The children of one label set are looked up once: prom-client otherwise hashes the label
        // object on every call, twice per request.
        const key = `${operation} ${method} ${status}`;
        let series = this.requestSeries.get(key);
        if (series === undefined) {
            const labels = { operation, method, status: String(status) };
            series = { count: this.requests.labels(labels), duration: this.durations.labels(labels) };
            this.requestSeries.set(key, series);
        }
        series.count.inc();
        series.duration.observe(seconds);
    }
    deprecatedCall(operation, apiKeyName) {
        this.deprecatedCalls.inc({ operation, api_key_name: apiKeyName });
    }
    rateLimitRejected(policy) {
        this.rateLimitRejections.inc({ policy });
    }
}
//# sourceMappingURL=metrics.js.map