// `petstore serve --workers N`: N processes serving the API on one port through node:cluster.
// The primary opens the store once (migrations, the bootstrap key) and closes it, forks the
// workers, prints one start-up line when they all listen, serves their summed metrics, replaces a
// worker that dies, and on SIGTERM or SIGINT has every worker drain before it exits. The primary
// accepts connections and hands them to the workers in turn; it never answers a request itself.
import cluster from 'node:cluster';
import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import { AggregatorRegistry } from 'prom-client';
import { loadTls } from '../http/tls.js';
import { isPretty, prettyStream } from '../observability/logging.js';
import { startMetricsServer } from '../observability/metrics-server.js';
import { clockFor, ensureBootstrapKey, startServer } from '../server.js';
import { openStore } from '../storage/open-store.js';
export const MAX_WORKERS = 64;
/** A worker that dies sooner than this after its start was failing: the next wait doubles. */
const STABLE_AFTER_MS = 10_000;
const FIRST_RESTART_DELAY_MS = 100;
const MAX_RESTART_DELAY_MS = 5_000;
function isListeningMessage(message) {
    return (typeof message === 'object' &&
        message !== null &&
        message.type === 'petstore:listening');
}
/**
 * SIGTERM or SIGINT: drain (`RunningServer.stop`), then end the process, 0 when all went well.
 * Ctrl-C comes from someone at a terminal, not from an orchestrator: no load balancer to wait for.
 */
export function drainAndExit(server, cfg, signal) {
    const drainDelayMs = signal === 'SIGINT' ? 0 : cfg.drainDelayMs;
    server.app.log.info({ signal, drainDelayMs }, 'draining before exit');
    server
        .stop({ drainDelayMs })
        .then(() => process.exit(0))
        .catch((err) => {
        server.app.log.error({ err }, 'shutdown failed');
        process.exit(1);
    });
}
/** The primary's metrics: each scrape asks every worker for its figures and sums them. */
class ClusterRegistry extends AggregatorRegistry {
    metrics() {
        return this.clusterMetrics();
    }
}
const LEVELS = { fatal: 60, error: 50, warn: 40, info: 30, debug: 20, trace: 10, silent: 100 };
/** The primary's own log lines, in the shape and format of the workers' (pino's JSON, or pretty). */
function primaryLog(cfg) {
    const sink = isPretty(cfg.logFormat, process.stdout.isTTY === true)
        ? prettyStream(process.stdout.isTTY === true)
        : process.stdout;
    const base = { pid: process.pid, hostname: hostname() };
    return (level, fields, msg) => {
        if (LEVELS[level] < LEVELS[cfg.logLevel])
            return;
        sink.write(`${JSON.stringify({ level: LEVELS[level], time: Date.now(), ...base, ...fields, msg })}\n`);
    };
}
/** Worker side: serve as one process would, but announce readiness to the primary. */
export async function runWorker(cfg) {
    let signal = null;
    let server = null;
    // Installed before the start, so a signal during it is honoured once the server is up. A second
    // signal is ignored: a terminal's Ctrl-C or systemd reach the whole group, and the primary
    // forwards the same signal again.
    const onSignal = (s) => {
        if (signal !== null)
            return;
        signal = s;
        if (server !== null)
            drainAndExit(server, cfg, s);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    // Workers cannot share a metrics port: the primary serves them all, asking each for its figures.
    // The start-up lines are the primary's to print, once for all workers.
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    server = await startServer({ ...cfg, metricsPort: null }, quiet);
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([server.metrics.registry]);
    const ready = {
        type: 'petstore:listening',
        address: server.address,
        storeKind: server.store.kind,
    };
    process.send?.(ready);
    if (signal !== null)
        drainAndExit(server, cfg, signal);
}
/** Primary side: prepare the store once, then run and watch `count` workers until a signal. */
export async function runPrimary(cfg, count, out) {
    // Everything that can be wrong with the settings stops the start here, before any fork.
    loadTls(cfg);
    const store = await openStore(cfg, (err) => process.stderr.write(`petstore: database connection error: ${err.message}\n`));
    try {
        await ensureBootstrapKey(cfg, store, clockFor(cfg), out);
    }
    finally {
        await store.close();
    }
    const metricsServer = cfg.metricsPort === null
        ? null
        : await startMetricsServer(new ClusterRegistry(), cfg.metricsHost, cfg.metricsPort);
    new Supervisor(primaryLog(cfg), count, out, metricsServer).start();
}
class Supervisor {
    log;
    count;
    out;
    metricsServer;
    phase = 'starting';
    slots;
    slotOf = new Map();
    forkedAt = new Map();
    listening = new Set();
    restartTimers = new Set();
    /** Deaths in a row of each slot's workers, each soon after its start. */
    quickDeaths;
    stopSignal = 'SIGTERM';
    exitCode = 0;
    constructor(log, count, out, metricsServer) {
        this.log = log;
        this.count = count;
        this.out = out;
        this.metricsServer = metricsServer;
        this.slots = Array.from({ length: count }, () => null);
        this.quickDeaths = Array.from({ length: count }, () => 0);
    }
    start() {
        // Round robin in the primary spreads connections evenly; left to the kernel, a few busy
        // workers would take most of them.
        cluster.schedulingPolicy = cluster.SCHED_RR;
        const onSignal = (signal) => {
            if (this.phase === 'stopping')
                return;
            this.log('info', { signal, workers: this.count }, 'stopping workers');
            this.stop(signal);
        };
        process.on('SIGTERM', onSignal);
        process.on('SIGINT', onSignal);
        for (let slot = 0; slot < this.count; slot++)
            this.fork(slot);
    }
    fork(slot) {
        const worker = cluster.fork();
        this.slots[slot] = worker;
        this.slotOf.set(worker, slot);
        this.forkedAt.set(worker, Date.now());
        worker.on('message', (message) => {
            if (isListeningMessage(message))
                this.onListening(worker, message);
        });
        worker.on('exit', (code, signal) => this.onExit(worker, code, signal));
        worker.on('error', (err) => this.log('warn', { worker: slot + 1, workerPid: worker.process.pid, err: err.message }, 'worker channel error'));
    }
    onListening(worker, message) {
        this.listening.add(worker);
        const slot = this.slotOf.get(worker);
        this.log('info', { worker: slot + 1, workerPid: worker.process.pid }, 'worker listening');
        if (this.phase !== 'starting' || this.listening.size < this.count)
            return;
        this.phase = 'running';
        // One line for all workers, in the single process's form, so scripts can wait for it.
        this.out.write(`petstore listening on ${message.address} (store: ${message.storeKind}, workers: ${this.count})\n`);
        if (this.metricsServer)
            this.out.write(`petstore metrics on ${this.metricsServer.url}\n`);
    }
    onExit(worker, code, signal) {
        const slot = this.slotOf.get(worker);
        const wasListening = this.listening.delete(worker);
        const lived = Date.now() - this.forkedAt.get(worker);
        this.slotOf.delete(worker);
        this.forkedAt.delete(worker);
        if (this.slots[slot] === worker)
            this.slots[slot] = null;
        const fields = { worker: slot + 1, workerPid: worker.process.pid, code, signal };
        if (this.phase === 'stopping') {
            // One still starting may end by the forwarded signal itself: it had nothing to drain.
            const clean = code === 0 || (!wasListening && signal === this.stopSignal);
            if (!clean) {
                this.log('error', fields, wasListening ? 'worker failed to stop cleanly' : 'worker failed to start');
                this.exitCode ||= 1;
            }
            this.exitIfAllStopped();
            return;
        }
        if (this.phase === 'starting') {
            // A worker that cannot start (port taken, database refused) will not fare better on retry:
            // stop like a single process would, with its exit status.
            this.log('error', fields, 'worker failed to start; stopping the others');
            this.exitCode = code !== null && code !== 0 ? code : 1;
            this.stop('SIGINT');
            return;
        }
        this.quickDeaths[slot] = lived < STABLE_AFTER_MS ? this.quickDeaths[slot] + 1 : 0;
        const delayMs = Math.min(FIRST_RESTART_DELAY_MS * 2 ** Math.max(0, this.quickDeaths[slot] - 1), MAX_RESTART_DELAY_MS);
        this.log('warn', { ...fields, restartInMs: delayMs }, 'worker exited unexpectedly; starting another');
        const timer = setTimeout(() => {
            this.restartTimers.delete(timer);
            this.fork(slot);
        }, delayMs);
        this.restartTimers.add(timer);
    }
    /** Forwards the signal to every worker; each drains as a single process would. */
    stop(signal) {
        this.phase = 'stopping';
        this.stopSignal = signal;
        for (const timer of this.restartTimers)
            clearTimeout(timer);
        this.restartTimers.clear();
        for (const worker of this.slots) {
            if (worker !== null && !worker.isDead())
                worker.process.kill(signal);
        }
        this.exitIfAllStopped();
    }
    exitIfAllStopped() {
        if (this.slots.some((worker) => worker !== null))
            return;
        this.log(this.exitCode === 0 ? 'info' : 'error', { exitCode: this.exitCode }, 'all workers stopped');
        const exit = () => process.exit(this.exitCode);
        if (this.metricsServer)
            this.metricsServer.close().then(exit, exit);
        else
            exit();
    }
}
//# sourceMappingURL=workers.js.map