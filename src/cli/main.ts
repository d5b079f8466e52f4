// The `petstore` command: one entry for everything an operator does.
import cluster from 'node:cluster'
import { Command, CommanderError } from 'commander'
import packageJson from '../../package.json' with { type: 'json' }
import { ConfigError, loadConfig } from '../config.js'
import { migrateStore, sqlitePathOf } from '../storage/open-store.js'
import { addBackupCommand } from './backup.js'
import { UsageError } from './command-context.js'
import { addKeysCommand } from './keys.js'
import { addSeedCommand } from './seed.js'
import { addServeCommand } from './serve.js'

const USAGE_ERROR = 2

/** A database URL fit to print: the password, if any, is masked. */
function withoutPassword(url: string): string {
  if (url.startsWith('sqlite:')) return url
  const u = new URL(url)
  if (u.password) u.password = '***'
  return u.toString()
}

/** `petstore migrate`: brings the schema up to date, and says which migrations that took. */
async function migrate(): Promise<void> {
  const cfg = loadConfig()
  const migrated = await migrateStore(cfg)
  const kind = sqlitePathOf(cfg.databaseUrl) === null ? 'postgres' : 'sqlite'
  const applied = migrated.map((name) => `applied migration ${name}\n`).join('')
  const nothing = migrated.length === 0 ? 'no migration to apply: ' : ''
  process.stdout.write(
    `${applied}${nothing}database is up to date (${kind}: ${withoutPassword(cfg.databaseUrl)})\n`,
  )
}

function fail(err: unknown): void {
  if (err instanceof CommanderError) {
    // Help and version exit 0; every mistake in the arguments exits 2 (commander has said which).
    process.exitCode = err.exitCode === 0 ? 0 : USAGE_ERROR
    return
  }
  process.stderr.write(`petstore: ${err instanceof Error ? err.message : String(err)}\n`)
  // An invalid setting (or an unreadable TLS file) is the operator's mistake too.
  process.exitCode = err instanceof UsageError || err instanceof ConfigError ? USAGE_ERROR : 1
}

const program = new Command('petstore')
  .description(
    'Pet store catalogue service. Settings come from the environment (see `petstore serve --help`).',
  )
  .version(packageJson.version, '-V, --version', 'print the version and exit')
  .showHelpAfterError()
  .exitOverride()
// In this order in `petstore --help`.
addServeCommand(program)
program
  .command('migrate')
  .description('create the database or bring its schema up to date, then exit')
  .action(migrate)
addBackupCommand(program)
addSeedCommand(program)
addKeysCommand(program)

void program
  .parseAsync(process.argv)
  .catch(fail)
  .then(() => {
    // A worker's channel to the primary keeps it alive: one that could not start must end itself.
    if (cluster.isWorker && (process.exitCode ?? 0) !== 0) process.exit()
  })
