// `petstore serve --workers N`: N processes serving the API on one port through node:cluster.
// The primary prepares the store once, then forks and watches the workers (supervisor.ts); it
// hands connections to them in turn and never answers a request itself.
import { hostname } from 'node:os'
import { Writable } from 'node:stream'
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client'
import type { Config } from '../config.js'
import { loadTls } from '../http/tls.js'
import { isPretty, prettyStream } from '../observability/logging.js'
import { startMetricsServer } from '../observability/metrics-server.js'
import { clockFor, ensureBootstrapKey, type RunningServer, startServer } from '../server.js'
import { openStore } from '../storage/open-store.js'
import { type ListeningMessage, type Log, Supervisor } from './supervisor.js'

export const MAX_WORKERS = 64

/**
 * SIGTERM or SIGINT: drain (`RunningServer.stop`), then end the process, 0 when all went well.
 * Ctrl-C comes from someone at a terminal, not from an orchestrator: no load balancer to wait for.
 */
export function drainAndExit(server: RunningServer, cfg: Config, signal: NodeJS.Signals): void {
  const drainDelayMs = signal === 'SIGINT' ? 0 : cfg.drainDelayMs
  server.app.log.info({ signal, drainDelayMs }, 'draining before exit')
  server
    .stop({ drainDelayMs })
    .then(() => process.exit(0))
    .catch((err) => {
      server.app.log.error({ err }, 'shutdown failed')
      process.exit(1)
    })
}

/** The primary's metrics: each scrape asks every worker for its figures and sums them. */
class ClusterRegistry extends AggregatorRegistry<PrometheusContentType> {
  override metrics(): Promise<string> {
    return this.clusterMetrics()
  }
}

const LEVELS = { fatal: 60, error: 50, warn: 40, info: 30, debug: 20, trace: 10, silent: 100 }

/** The primary's own log lines, in the shape and format of the workers' (pino's JSON, or pretty). */
function primaryLog(cfg: Config): Log {
  const sink = isPretty(cfg.logFormat, process.stdout.isTTY === true)
    ? prettyStream(process.stdout.isTTY === true)
    : process.stdout
  const base = { pid: process.pid, hostname: hostname() }
  return (level, fields, msg) => {
    if (LEVELS[level] < LEVELS[cfg.logLevel]) return
    sink.write(
      `${JSON.stringify({ level: LEVELS[level], time: Date.now(), ...base, ...fields, msg })}\n`,
    )
  }
}

/** Worker side: serve as one process would, but announce readiness to the primary. */
export async function runWorker(cfg: Config): Promise<void> {
  let signal: NodeJS.Signals | null = null
  let server: RunningServer | null = null
  // Installed before the start, so a signal during it is honoured once the server is up. A second
  // signal is ignored: a terminal's Ctrl-C or systemd reach the whole group, and the primary
  // forwards the same signal again.
  const onSignal = (s: NodeJS.Signals) => {
    if (signal !== null) return
    signal = s
    if (server !== null) drainAndExit(server, cfg, s)
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  // Workers cannot share a metrics port: the primary serves them all, asking each for its figures.
  // The start-up lines are the primary's to print, once for all workers.
  const quiet = new Writable({ write: (_chunk, _encoding, done) => done() })
  server = await startServer({ ...cfg, metricsPort: null }, quiet)
  new AggregatorRegistry()
  AggregatorRegistry.setRegistries([server.metrics.registry])
  const ready: ListeningMessage = {
    type: 'petstore:listening',
    address: server.address,
    storeKind: server.store.kind,
  }
  process.send?.(ready)
  if (signal !== null) drainAndExit(server, cfg, signal)
}

/** Primary side: prepare the store once, then run and watch `count` workers until a signal. */
export async function runPrimary(
  cfg: Config,
  count: number,
  out: NodeJS.WritableStream,
): Promise<void> {
  // Everything that can be wrong with the settings stops the start here, before any fork.
  loadTls(cfg)
  const { store } = await openStore(cfg, (err) =>
    process.stderr.write(`petstore: database connection error: ${err.message}\n`),
  )
  try {
    await ensureBootstrapKey(cfg, store, clockFor(cfg), out)
  } finally {
    await store.close()
  }
  const metricsServer =
    cfg.metricsPort === null
      ? null
      : await startMetricsServer(new ClusterRegistry(), cfg.metricsHost, cfg.metricsPort)
  new Supervisor(primaryLog(cfg), count, out, metricsServer).start()
}
