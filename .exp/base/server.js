// Runs the service: config → storage → app → listen; SIGTERM and SIGINT drain and exit 0.
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from './app.js';
import { createApiKey } from './auth/api-keys.js';
import { clockStartingAt, systemClock } from './clock.js';
import { loadTls } from './http/tls.js';
import { loggerOptions } from './observability/logging.js';
import { Metrics } from './observability/metrics.js';
import { startMetricsServer } from './observability/metrics-server.js';
import { openStore } from './storage/open-store.js';
/** A Redis that does not answer within these bounds counts as down: requests go unlimited. */
const REDIS_CONNECT_TIMEOUT_MS = 2000;
const REDIS_COMMAND_TIMEOUT_MS = 1000;
/**
 * The client of the shared rate-limit counters. It fails fast rather than queueing while Redis is
 * away (the limiter then serves requests unlimited), reconnects by itself with ioredis's back-off,
 * and reports each outage once on stderr. The start waits for the first connection, or its
 * failure, so the first requests are already counted; Redis being down does not stop the start.
 */
export async function openRedis(url, err) {
    // Loaded only when asked for: most deployments count in memory.
    const { Redis } = await import('ioredis');
    const redis = new Redis(url, {
        connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
        commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
    });
    let down = false;
    redis.on('error', (e) => {
        if (down)
            return;
        down = true;
        err.write(`petstore: rate-limit store (Redis) unreachable: ${e.message}; requests are served without rate limits until it returns\n`);
    });
    redis.on('ready', () => {
        if (!down)
            return;
        down = false;
        err.write('petstore: rate-limit store (Redis) reachable again\n');
    });
    await new Promise((resolve) => {
        const settled = () => {
            clearTimeout(timer);
            redis.off('ready', settled);
            redis.off('error', settled);
            resolve();
        };
        const timer = setTimeout(settled, REDIS_CONNECT_TIMEOUT_MS + 500);
        redis.once('ready', settled);
        redis.once('error', settled);
    });
    return redis;
}
/** How often a closing server looks for connections that have gone idle, to close them. */
const IDLE_SWEEP_MS = 50;
export function clockFor(config) {
    return config.now ? clockStartingAt(config.now) : systemClock;
}
/** First start with no key at all: make one, show it once, keep only its hash. */
export async function ensureBootstrapKey(config, store, clock, out) {
    if (config.apiKeys.length > 0 || (await store.countApiKeys()) > 0)
        return;
    const { key, record } = await createApiKey(store, clock, 'bootstrap');
    out.write([
        '',
        '================================================================',
        ' No API key existed, so one was created. It is shown only now:',
        '',
        `   ${key}`,
        '',
        ` Key id: ${record.id}. Manage keys with \`petstore keys\`.`,
        '================================================================',
        '',
    ].join('\n'));
}
export async function startServer(config, out) {
    const clock = clockFor(config);
    // Read before storage opens, so an unusable certificate stops the start with nothing to undo.
    const tls = loadTls(config);
    const store = await openStore(config, (err) => process.stderr.write(`petstore: database connection error: ${err.message}\n`));
    let draining = false;
    let app;
    const metrics = new Metrics();
    let metricsServer = null;
    let redis;
    try {
        await ensureBootstrapKey(config, store, clock, out);
        if (config.rateLimitStore === 'redis')
            redis = await openRedis(config.redisUrl, process.stderr);
        app = await buildApp({
            config,
            store,
            clock,
            isDraining: () => draining,
            tls,
            logger: loggerOptions(config),
            metrics,
            ...(redis ? { redis } : {}),
        });
        // Metrics first: a port clash there stops the start before the API takes any traffic.
        if (config.metricsPort !== null) {
            metricsServer = await startMetricsServer(metrics.registry, config.metricsHost, config.metricsPort);
        }
        await app.listen({ port: config.port, host: config.host });
    }
    catch (err) {
        await metricsServer?.close();
        redis?.disconnect();
        await store.close();
        throw err;
    }
    const addr = app.server.address();
    const address = typeof addr === 'string' || addr === null
        ? String(addr)
        : `${tls ? 'https' : 'http'}://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
    out.write(`petstore listening on ${address} (store: ${store.kind})\n`);
    const metricsUrl = metricsServer?.url ?? null;
    if (metricsUrl !== null)
        out.write(`petstore metrics on ${metricsUrl}\n`);
    let stopping;
    const stop = (opts = {}) => {
        stopping ??= (async () => {
            draining = true;
            // Closing the listener at once would also drop idle keep-alive connections, so a load
            // balancer would never see readiness turn 503; it gets this long to notice and move away.
            await sleep(opts.drainDelayMs ?? config.drainDelayMs);
            const timeout = new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref());
            // A keep-alive connection whose request was in flight when the listener closed goes idle
            // only afterwards, and would hold the close open until the timeout: it is closed as soon
            // as it is idle (a request pipelined behind the last one is still answered first).
            const server = app.server;
            const idleSweep = 'closeIdleConnections' in server
                ? setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
                : undefined;
            await Promise.race([app.close(), timeout]);
            clearInterval(idleSweep);
            // Scrapes go on through the drain, so its last figures can be seen; then they stop too.
            await metricsServer?.close();
            // The app has closed, so no counter is being updated any more.
            redis?.disconnect();
            await store.close();
        })();
        return stopping;
    };
    return { app, store, address, metricsUrl, metrics, stop };
}
//# sourceMappingURL=server.js.map