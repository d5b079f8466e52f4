import { toApiKey } from '../api-key-row.js';
import { AsyncWriteBatcher } from '../async-write-batcher.js';
import { openDatabase } from './connection.js';
import { migrateSqlite } from './migrate.js';
import { createTransaction } from './pet-writes.js';
import { SqliteWriter } from './writer.js';
// Rows come as arrays rather than objects: better-sqlite3 builds a row object property by
// property, which was the largest single cost of a list request in the CPU profile.
const toPet = (row) => {
    const status = row[3];
    return status === null
        ? { id: row[0], name: row[1], categoryId: row[2] }
        : { id: row[0], name: row[1], categoryId: row[2], status };
};
/**
 * Opens the store: one connection on the main thread for reads and rare writes (keys,
 * idempotency claims), and a writer thread with its own connection for the creates. An in-memory
 * database cannot be shared with a thread, so its creates commit on the main connection.
 */
export async function openSqliteStore(path) {
    const db = openDatabase(path, { create: true });
    try {
        await migrateSqlite(db);
    }
    catch (err) {
        db.close();
        throw err;
    }
    return new SqliteStore(db, path === ':memory:' ? null : new SqliteWriter(path));
}
export class SqliteStore {
    db;
    writer;
    kind = 'sqlite';
    statements;
    creates;
    bulkInsert;
    closed = false;
    /** Commits made through this connection, which its own data_version does not count. */
    ownCommits = 0;
    constructor(db, writer = null) {
        this.db = db;
        this.writer = writer;
        db.defaultSafeIntegers(true);
        this.statements = {
            firstPage: db
                .prepare('SELECT id, name, category_id, status FROM pets ORDER BY id LIMIT ?')
                .raw(true),
            pageAfter: db
                .prepare('SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?')
                .raw(true),
            firstPageByStatus: db
                .prepare('SELECT id, name, category_id, status FROM pets WHERE status = ? ORDER BY id LIMIT ?')
                .raw(true),
            pageAfterByStatus: db
                .prepare('SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?')
                .raw(true),
            getPet: db
                .prepare('SELECT id, name, category_id, status FROM pets WHERE id = ?')
                .raw(true),
            bulkInsertPet: db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)'),
            findIdempotency: db.prepare('SELECT request_hash, pet_id, created_at, locked_until FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?'),
            upsertIdempotency: db.prepare(`INSERT INTO idempotency_keys (api_key_id, idempotency_key, request_hash, pet_id, created_at, locked_until)
         VALUES (?, ?, ?, NULL, ?, ?)
         ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
           request_hash = excluded.request_hash, pet_id = NULL,
           created_at = excluded.created_at, locked_until = excluded.locked_until`),
            releaseIdempotency: db.prepare('DELETE FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ? AND pet_id IS NULL'),
            deleteIdempotencyBefore: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?'),
            insertApiKey: db.prepare('INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)'),
            findApiKey: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
            listApiKeys: db.prepare('SELECT * FROM api_keys ORDER BY created_at, id'),
            revokeApiKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
            countApiKeys: db.prepare('SELECT count(*) AS n FROM api_keys'),
            ping: db.prepare('SELECT 1 AS ok'),
            dataVersion: db.prepare('PRAGMA data_version').pluck().safeIntegers(false),
        };
        // Creates are group-committed: those that arrive while a batch is being synced go together in
        // the next one. On the writer thread the event loop goes on serving while a batch syncs.
        const commitHere = writer === null ? createTransaction(db) : null;
        this.creates = new AsyncWriteBatcher(async (items) => {
            const ids = commitHere ? commitHere(items) : await writer.commit(items);
            if (commitHere)
                this.ownCommits++;
            return items.map(({ pet }, i) => ({ id: ids[i], ...pet }));
        });
        const insertAll = db.transaction((pets, createdAt) => {
            const insert = this.statements.bulkInsertPet;
            for (const pet of pets)
                insert.run(pet.name, pet.categoryId, pet.status ?? null, createdAt);
        });
        this.bulkInsert = (pets, createdAt) => insertAll.immediate(pets, createdAt);
    }
    async listPets({ afterId, status, limit }) {
        const s = this.statements;
        let rows;
        if (status === null) {
            rows = afterId === null ? s.firstPage.all(limit) : s.pageAfter.all(afterId, limit);
        }
        else {
            rows =
                afterId === null
                    ? s.firstPageByStatus.all(status, limit)
                    : s.pageAfterByStatus.all(status, afterId, limit);
        }
        return rows.map(toPet);
    }
    async getPet(id) {
        const row = this.statements.getPet.get(id);
        return row ? toPet(row) : null;
    }
    createPet(pet, completes) {
        if (this.closed)
            return Promise.reject(new Error('store is closed'));
        return this.creates.submit({ pet, completes });
    }
    async insertPets(pets) {
        if (this.closed)
            throw new Error('store is closed');
        // Creates queued before this call get their ids first, as they would with any other order.
        await this.creates.idle();
        // One transaction, so one WAL sync (synchronous=FULL) makes the whole batch durable at once.
        this.bulkInsert(pets, Date.now());
        this.ownCommits++;
    }
    async claimIdempotencyKey(req) {
        const now = req.now.getTime();
        const claim = this.db.transaction(() => {
            const row = this.statements.findIdempotency.get(req.apiKeyId, req.key);
            const live = row !== undefined && Number(row.created_at) + req.retentionMs > now;
            if (row && live) {
                if (row.request_hash !== req.requestHash)
                    return { outcome: 'mismatch' };
                if (row.pet_id !== null)
                    return { outcome: 'completed', petId: row.pet_id };
                if (row.locked_until !== null && Number(row.locked_until) > now) {
                    return { outcome: 'in_progress' };
                }
            }
            this.statements.upsertIdempotency.run(req.apiKeyId, req.key, req.requestHash, now, now + req.leaseMs);
            return { outcome: 'claimed' };
        });
        const outcome = claim.immediate();
        this.ownCommits++;
        return outcome;
    }
    async releaseIdempotencyKey(ref) {
        this.statements.releaseIdempotency.run(ref.apiKeyId, ref.key);
        this.ownCommits++;
    }
    async deleteIdempotencyKeysBefore(cutoff) {
        const { changes } = this.statements.deleteIdempotencyBefore.run(cutoff.getTime());
        this.ownCommits++;
        return changes;
    }
    async insertApiKey(k) {
        this.statements.insertApiKey.run(k.id, k.name, k.secretHash, k.createdAt.getTime(), k.expiresAt?.getTime() ?? null, k.revokedAt?.getTime() ?? null);
        this.ownCommits++;
    }
    async findApiKey(id) {
        const row = this.statements.findApiKey.get(id);
        return row ? toApiKey(row) : null;
    }
    async listApiKeys() {
        return this.statements.listApiKeys.all().map(toApiKey);
    }
    async revokeApiKey(id, at) {
        const { changes } = this.statements.revokeApiKey.run(at.getTime(), id);
        this.ownCommits++;
        return changes > 0;
    }
    async countApiKeys() {
        return Number(this.statements.countApiKeys.get().n);
    }
    /**
     * SQLite's data_version moves when another connection (a worker thread, another process such as
     * `petstore keys revoke`) commits; this connection's own commits are counted beside it. About
     * 1 µs: it opens a read transaction and looks at the WAL index, nothing more.
     */
    dataVersion() {
        return this.statements.dataVersion.get() + this.ownCommits;
    }
    async ping() {
        this.statements.ping.get();
    }
    async close() {
        if (this.closed)
            return;
        this.closed = true;
        await this.creates.idle();
        await this.writer?.close();
        this.db.close();
    }
    /** The main connection, and the writer thread's once the first create started it. */
    stats() {
        const open = this.closed ? 0 : 1 + (this.writer?.running ? 1 : 0);
        return {
            connections: { inUse: open, idle: 0, waiting: 0 },
            queuedWrites: this.creates.queued,
        };
    }
    onWriteBatch(listener) {
        this.creates.onCommit(listener);
    }
}
//# sourceMappingURL=sqlite-store.js.map