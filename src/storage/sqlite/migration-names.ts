/**
 * The keys of migrations.ts, in order (test/storage/sqlite/migrations.test.ts checks they agree):
 * start-up checks this list, so Kysely, slow to load, is loaded only when a migration is due.
 */
export const SQLITE_MIGRATION_NAMES: readonly string[] = [
  '001-initial',
  '002-pets-status-check-as-comparisons',
  '003-idempotency-claim-token',
]
