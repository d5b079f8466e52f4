// The `petstore` command: one entry for everything an operator does.
import cluster from 'node:cluster'
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import packageJson from '../../package.json' with { type: 'json' }
import { type Config, ConfigError, loadConfig, settings } from '../config.js'
import { durationParser } from '../duration.js'
import { clockFor, startServer } from '../server.js'
import { openStore } from '../storage/open-store.js'
import type { Store } from '../storage/store.js'
import { createKeyCommand, listKeysCommand, revokeKeyCommand } from './keys.js'
import {
  DEFAULT_BATCH_SIZE,
  MAX_BATCH_SIZE,
  MAX_SEED_COUNT,
  progressReporter,
  type SeedStatus,
  seedCommand,
  seedStatuses,
} from './seed.js'
import { drainAndExit, MAX_WORKERS, runPrimary, runWorker } from './workers.js'

const USAGE_ERROR = 2

/** A database URL fit to print: the password, if any, is masked. */
function withoutPassword(url: string): string {
  if (url.startsWith('sqlite:')) return url
  const u = new URL(url)
  if (u.password) u.password = '***'
  return u.toString()
}

class UsageError extends Error {}

/** Words of `text` in lines of at most `width` characters, each after `indent`. */
function wrap(text: string, indent: string, width: number): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(indent + line)
      line = word
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  if (line !== '') lines.push(indent + line)
  return lines.join('\n')
}

/** `serve --help`'s list of the settings it reads, from the table config.ts parses them by. */
function settingsHelp(): string {
  const entries = settings.map((s) => {
    const plain = (t: string) => t.replaceAll('`', '')
    const byDefault = s.default === '' ? 'unset' : plain(s.default)
    return `  ${s.env}\n${wrap(`${plain(s.description)} Default: ${byDefault}.`, '      ', 72)}`
  })
  return `\nSettings, read from the environment (or a .env file in the working directory):\n${entries.join('\n')}`
}

function config(): Config {
  try {
    return loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message)
    throw err
  }
}

async function withStore<T>(cfg: Config, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(cfg)
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

/** `90s`, `30m`, `12h`, `30d`, `2w`: from 1 to 9,999,999 of a unit, written without a leading zero. */
const keyLifetime = durationParser(['s', 'm', 'h', 'd', 'w'], '[1-9][0-9]{0,6}')

function durationArg(text: string): number {
  const ms = keyLifetime(text)
  if (ms === null)
    throw new InvalidArgumentError('expected a duration such as 90s, 30m, 12h, 30d or 2w')
  return ms
}

function nameArg(text: string): string {
  if (!/^[\x20-\x7e]{1,100}$/.test(text) || text.trim() === '') {
    throw new InvalidArgumentError('expected 1 to 100 printable ASCII characters')
  }
  return text
}

function wholeNumberArg(max: number): (text: string) => number {
  return (text) => {
    const n = /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : Number.NaN
    if (!(n <= max)) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`)
    return n
  }
}

async function serve(opts: { workers?: number }): Promise<void> {
  const cfg = config()
  // A worker runs this same command line; the primary decided how many of them there are.
  if (cluster.isWorker) return runWorker(cfg)
  const workers = opts.workers ?? cfg.workers
  if (workers > 1) return runPrimary(cfg, workers, process.stdout)
  const started = startServer(cfg, process.stdout)
  // Listening before the start-up line is printed: a supervisor may signal as soon as it reads it,
  // and without a listener the signal would end the process at once. One that comes during the
  // start drains once started. A repeated signal must not end the drain: a terminal's Ctrl-C
  // reaches npm and node alike, and `npm start` then forwards its own copy to node.
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

function buildProgram(): Command {
  const program = new Command('petstore')
    .description(
      'Pet store catalogue service. Settings come from the environment (see `petstore serve --help`).',
    )
    .version(packageJson.version, '-V, --version', 'print the version and exit')
    .showHelpAfterError()
    .exitOverride()

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

  program
    .command('migrate')
    .description('create the database or bring its schema up to date, then exit')
    .action(async () => {
      const cfg = config()
      await withStore(cfg, async (store) => {
        process.stdout.write(
          `database is up to date (${store.kind}: ${withoutPassword(cfg.databaseUrl)})\n`,
        )
      })
    })

  program
    .command('seed')
    .description('add generated pets in large batches (names pet-1, pet-2, ...) for trying it out')
    .requiredOption(
      '--count <n>',
      `how many pets to add, 1 to ${MAX_SEED_COUNT}`,
      wholeNumberArg(MAX_SEED_COUNT),
    )
    .addOption(
      new Option(
        '--status <status>',
        'status of every pet; mixed cycles available, pending, sold, none',
      )
        .choices(seedStatuses)
        .default('mixed'),
    )
    .option(
      '--batch-size <n>',
      `pets per transaction, 1 to ${MAX_BATCH_SIZE}`,
      wholeNumberArg(MAX_BATCH_SIZE),
      DEFAULT_BATCH_SIZE,
    )
    .addHelpText(
      'after',
      '\nEvery tenth pet has a categoryId beyond 2^53; the others have categories 1 to 100.\n' +
        'Progress goes to stderr (a bar on a terminal, a line per tenth otherwise), the summary to stdout.',
    )
    .action(async (opts: { count: number; status: SeedStatus; batchSize: number }) => {
      const cfg = config()
      const now = () => performance.now()
      await withStore(cfg, (store) =>
        seedCommand(
          store,
          opts,
          process.stdout,
          progressReporter(process.stderr, opts.count, now),
          now,
        ),
      )
    })

  const keys = program.command('keys').description('manage API keys')
  keys
    .command('create')
    .description('create a key and print it once, alone on the last line')
    .requiredOption('--name <name>', 'who or what the key is for', nameArg)
    .option(
      '--expires-in <duration>',
      'lifetime, e.g. 30d, 12h, 2w (default: no expiry)',
      durationArg,
    )
    .action(async (opts: { name: string; expiresIn?: number }) => {
      const cfg = config()
      await withStore(cfg, (store) =>
        createKeyCommand(store, clockFor(cfg), opts.name, opts.expiresIn ?? null, process.stdout),
      )
    })
  keys
    .command('list')
    .description('list keys (ids, names, states; never the keys themselves)')
    .option('--json', 'print JSON instead of a table')
    .action(async (opts: { json?: boolean }) => {
      const cfg = config()
      await withStore(cfg, (store) =>
        listKeysCommand(store, clockFor(cfg), opts.json === true, process.stdout),
      )
    })
  keys
    .command('revoke')
    .description('revoke a key by id; it is refused from its next request on')
    .argument('<id>', 'the key id shown by `keys list`')
    .action(async (id: string) => {
      const cfg = config()
      const revoked = await withStore(cfg, (store) =>
        revokeKeyCommand(store, clockFor(cfg), id, process.stdout),
      )
      if (!revoked) throw new UsageError(`no active API key with id ${id}`)
    })
  return program
}

async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv)
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; every mistake in the arguments exits 2.
      process.exitCode = err.exitCode === 0 ? 0 : USAGE_ERROR
      return
    }
    // A ConfigError can also come from serve itself (an unreadable TLS file).
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
