// `petstore serve`: the HTTP API, in this process or in workers (workers.ts).
import cluster from 'node:cluster'
import type { Command } from 'commander'
import { startServer } from '../server.js'
import { wholeNumberArg } from './args.js'
import { commandConfig } from './command-context.js'
import { settingsHelp } from './settings-help.js'
import { drainAndExit, MAX_WORKERS, runPrimary, runWorker } from './workers.js'

async function serve(opts: { workers?: number }): Promise<void> {
  const cfg = commandConfig()
  // A worker runs this same command line; the primary decided how many of them there are.
  if (cluster.isWorker) return runWorker(cfg)
  const workers = opts.workers ?? cfg.workers
  if (workers > 1) return runPrimary(cfg, workers, process.stdout)
  const started = startServer(cfg, process.stdout)
  // Listening before the start-up line is printed: a supervisor may signal as soon as it reads it.
  // A repeated signal must not end the drain (Ctrl-C reaches npm and node, and npm forwards it).
  let draining = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (draining) return
    draining = true
    // A start that fails is reported by the `await` below.
    started.then(
      (server) => drainAndExit(server, cfg, signal),
      () => {},
    )
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  await started
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
