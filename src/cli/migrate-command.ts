// `petstore migrate`: opening the store brings its schema up to date.
import type { Command } from 'commander'
import { commandConfig, withStore } from './command-context.js'

/** A database URL fit to print: the password, if any, is masked. */
function withoutPassword(url: string): string {
  if (url.startsWith('sqlite:')) return url
  const u = new URL(url)
  if (u.password) u.password = '***'
  return u.toString()
}

export function addMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('create the database or bring its schema up to date, then exit')
    .action(async () => {
      const cfg = commandConfig()
      await withStore(cfg, async (store) => {
        process.stdout.write(
          `database is up to date (${store.kind}: ${withoutPassword(cfg.databaseUrl)})\n`,
        )
      })
    })
}
