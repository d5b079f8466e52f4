// `petstore migrate`: brings the schema up to date, and says which migrations that took.
import type { Command } from 'commander'
import { loadConfig } from '../config.js'
import { migrateStore, sqlitePathOf } from '../storage/open-store.js'

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
      const cfg = loadConfig()
      const migrated = await migrateStore(cfg)
      const kind = sqlitePathOf(cfg.databaseUrl) === null ? 'postgres' : 'sqlite'
      const applied = migrated.map((name) => `applied migration ${name}\n`).join('')
      const nothing = migrated.length === 0 ? 'no migration to apply: ' : ''
      process.stdout.write(
        `${applied}${nothing}database is up to date (${kind}: ${withoutPassword(cfg.databaseUrl)})\n`,
      )
    })
}
