import { SQLITE_MIGRATION_NAMES } from './migration-names.js';
/** True when Kysely's bookkeeping table lists every migration this version knows. */
function appliedAll(db) {
    const bookkeeping = db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'")
        .get();
    if (bookkeeping === undefined)
        return false;
    const applied = new Set(db.prepare('SELECT name FROM kysely_migration').pluck().all());
    return SQLITE_MIGRATION_NAMES.every((name) => applied.has(name));
}
/**
 * Brings the schema up to date and returns the names of the migrations it applied; several
 * processes may do it at once on one file (see migrate-with-kysely.ts).
 */
export async function migrateSqlite(db) {
    if (appliedAll(db))
        return [];
    const { runSqliteMigrations } = await import('./migrate-with-kysely.js');
    return runSqliteMigrations(db);
}
//# sourceMappingURL=migrate.js.map