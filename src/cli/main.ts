// The `petstore` command: one entry for everything an operator does.
import cluster from 'node:cluster'
import { CommanderError } from 'commander'
import { ConfigError } from '../config.js'
import { UsageError } from './command-context.js'
import { buildProgram } from './program.js'

const USAGE_ERROR = 2

async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv)
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; every mistake in the arguments exits 2.
      process.exitCode = err.exitCode === 0 ? 0 : USAGE_ERROR
      return
    }
    // An invalid setting (or an unreadable TLS file) is the operator's mistake too.
    if (err instanceof UsageError || err instanceof ConfigError) {
      process.stderr.write(`petstore: ${err.message}\n`)
      process.exitCode = USAGE_ERROR
      return
    }
    process.stderr.write(`petstore: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exitCode = 1
  }
}

void main(process.argv).then(() => {
  // A worker's channel to the primary keeps it alive: one that could not start must end itself.
  if (cluster.isWorker && (process.exitCode ?? 0) !== 0) process.exit()
})
