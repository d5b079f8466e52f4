import { CompiledQuery, Kysely, Migrator, SqliteAdapter, SqliteDialect, SqliteDriver, } from 'kysely';
import { SQLITE_MIGRATION_NAMES } from './migration-names.js';
import { sqliteMigrations } from './migrations.js';
/**
 * Kysely's SQLite migrator neither locks nor uses a transaction (it assumes one process), so two
 * processes starting at once on a new file could both apply a migration ("table already exists").
 * Here all pending migrations run in one transaction that takes SQLite's write lock as it begins,
 * before the applied ones are read: another process waits for it (busy_timeout), then finds them
 * applied. A plain BEGIN would read first and fail with "database is locked" when it tried to write.
 */
class TransactionalSqliteAdapter extends SqliteAdapter {
    get supportsTransactionalDdl() {
        return true;
    }
}
class ImmediateSqliteDriver extends SqliteDriver {
    async beginTransaction(connection) {
        await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    }
}
class MigrationSqliteDialect extends SqliteDialect {
    config;
    constructor(config) {
        super(config);
        this.config = config;
    }
    createDriver() {
        return new ImmediateSqliteDriver(this.config);
    }
    createAdapter() {
        return new TransactionalSqliteAdapter();
    }
}
/** Brings the database schema up to date; several processes may do it at once on one file. */
export async function runSqliteMigrations(database) {
    const names = Object.keys(sqliteMigrations);
    if (names.join('\n') !== SQLITE_MIGRATION_NAMES.join('\n')) {
        throw new Error(`migration-names.ts lists ${SQLITE_MIGRATION_NAMES}, migrations.ts has ${names}`);
    }
    // The dialect closes its database when Kysely is destroyed; the caller keeps using this one.
    const keepOpen = new Proxy(database, {
        get: (target, prop) => {
            if (prop === 'close')
                return () => target;
            const value = Reflect.get(target, prop, target);
            return typeof value === 'function' ? value.bind(target) : value;
        },
    });
    const db = new Kysely({ dialect: new MigrationSqliteDialect({ database: keepOpen }) });
    try {
        const migrator = new Migrator({
            db,
            provider: { getMigrations: async () => sqliteMigrations },
        });
        const result = await migrator.migrateToLatest();
        if (result.error)
            throw result.error;
        return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    }
    finally {
        await db.destroy();
    }
}
//# sourceMappingURL=migrate-with-kysely.js.map