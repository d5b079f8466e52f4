/**
 * The names of the SQLite migrations (the keys of migrations.ts, in order; the migrator refuses
 * to run when the two differ). Start-up reads only this list to see that nothing is pending, so
 * Kysely (~110 ms to load) is loaded only when a migration is due.
 */
export const SQLITE_MIGRATION_NAMES: readonly string[] = [
  '001-initial',
  '002-pets-status-check-as-comparisons',
]
