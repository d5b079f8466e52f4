// Kysely's PostgreSQL dialect for the migrator, with its lock held by the migrations' transaction
// rather than by the session: behind a pooler in transaction mode a session's lock stays on a
// server connection that other clients then use, and its release may reach another one.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  PostgresAdapter,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
} from 'kysely'

/**
 * Kysely's own lock id, so that instances of a release taking the session lock and instances of
 * this one still exclude each other while both run.
 */
const MIGRATION_LOCK = '3853314791062309107'

/** No lock of its own around the transaction: the transaction takes it (LockingDriver). */
class TransactionLockedAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}
  override async releaseMigrationLock(): Promise<void> {}
}

/** Begins each transaction holding the migration lock, bounds set, in one round trip. */
class LockingDriver extends PostgresDriver {
  constructor(
    config: PostgresDialectConfig,
    private readonly begin: string,
  ) {
    super(config)
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(this.begin))
  }
}

export class MigrationDialect extends PostgresDialect {
  constructor(
    private readonly config: PostgresDialectConfig,
    /** `BEGIN` and the transaction's bounds (PooledStatements); the lock is taken after them. */
    private readonly begin: string,
  ) {
    super(config)
  }

  override createDriver(): Driver {
    return new LockingDriver(
      this.config,
      `${this.begin}; SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`,
    )
  }

  override createAdapter(): PostgresAdapter {
    return new TransactionLockedAdapter()
  }
}
