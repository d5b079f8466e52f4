// `petstore serve`: the HTTP API, in this process, or in workers under a primary (workers.ts).
import cluster from 'node:cluster'
import { Writable } from 'node:stream'
import type { Command } from 'commander'
import { AggregatorRegistry } from 'prom-client'
import { type Config, loadConfig } from '../config.js'
import { type RunningServer, startServer } from '../server.js'
import { wholeNumberArg } from './command-context.js'
import { settingsHelp } from './settings-help.js'
import { MAX_WORKERS, runPrimary } from './workers.js'

/**
 * Starts the server; SIGTERM or SIGINT drains it (`RunningServer.stop`) and ends the process, 0
 * when all went well. Listening from before the start, so a signal during it is honoured once the
 * server is up: a supervisor may signal as soon as it reads the start-up line. A repeated signal
 * is ignored: a terminal's Ctrl-C reaches npm and node, and npm, like a primary, forwards it again.
 */
function serveUntilSignal(cfg: Config, out: NodeJS.WritableStream): Promise<RunningServer> {
  const started = startServer(cfg, out)
  let signalled = false
  const onSignal = async (signal: NodeJS.Signals) => {
    if (signalled) return
    signalled = true
    // A start that fails is reported by whoever awaits it.
    const server = await started.catch(() => null)
    if (server === null) return
    // Ctrl-C comes from someone at a terminal, not from an orchestrator: no load balancer to wait for.
    const drainDelayMs = signal === 'SIGINT' ? 0 : cfg.drainDelayMs
    server.app.log.info({ signal, drainDelayMs }, 'draining before exit')
    try {
      await server.stop({ drainDelayMs })
    } catch (err) {
      server.app.log.error({ err }, 'shutdown failed')
      process.exit(1)
    }
    process.exit(0)
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  return started
}

async function serve(opts: { workers?: number }): Promise<void> {
  const cfg = loadConfig()
  const workers = opts.workers ?? cfg.workers
  if (cluster.isPrimary) {
    if (workers > 1) return runPrimary(cfg, workers)
    await serveUntilSignal(cfg, process.stdout)
    return
  }
  // A worker. Workers cannot share a metrics port: the primary serves them all, asking each for
  // its figures. The start-up lines are the primary's to print, once for all workers.
  const quiet = new Writable({ write: (_chunk, _encoding, done) => done() })
  const server = await serveUntilSignal({ ...cfg, metricsPort: null }, quiet)
  // Made in a worker, an AggregatorRegistry answers the primary's requests for figures.
  new AggregatorRegistry()
  AggregatorRegistry.setRegistries([server.metrics.registry])
  process.send?.({ listening: server.address })
}

export function addServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP API (the default of `npm start`)')
    .option(
      '--workers <n>',
      `processes serving the API on the one port, 1 to ${MAX_WORKERS} (default: PETSTORE_WORKERS)`,
      wholeNumberArg(MAX_WORKERS),
    )
    .addHelpText('after', settingsHelp)
    .action(serve)
}
