// API keys: how they are made, how they look, and how a presented key is checked.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
/**
 * A key reads `pet_<id>_<secret>`: the id finds the record without a table scan, and only the
 * SHA-256 of the secret is stored. The secret has 256 bits of entropy, so a fast hash is enough.
 */
const KEY_PATTERN = /^pet_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
const sha256 = (s) => createHash('sha256').update(s).digest();
export function generateApiKey(name, now, expiresAt) {
    const id = randomBytes(6).toString('hex');
    const secret = randomBytes(32).toString('base64url');
    return {
        key: `pet_${id}_${secret}`,
        record: { id, name, secretHash: sha256(secret), createdAt: now, expiresAt, revokedAt: null },
    };
}
export async function createApiKey(store, clock, name, expiresAt = null) {
    const created = generateApiKey(name, clock.now(), expiresAt);
    await store.insertApiKey(created.record);
    return created;
}
/** Keys remembered at most; past it the memory starts afresh (only keys that matched get in). */
const MAX_REMEMBERED_KEYS = 10_000;
/** Checks presented keys against stored keys and against keys given in configuration. */
export class ApiKeyVerifier {
    store;
    clock;
    configuredKeys;
    /**
     * Keys that matched, by the presented text, so that a client's next request skips the lookup
     * and the hashing. An entry from a stored key holds only while the store's dataVersion is the
     * one it was read at: any commit anywhere (a revocation by `petstore keys revoke` in another
     * process included) sends the next request back to the database. Without a version (PostgreSQL)
     * the store is asked on every request.
     */
    remembered = new Map();
    constructor(store, clock, configuredKeys) {
        this.store = store;
        this.clock = clock;
        this.configuredKeys = configuredKeys.map((key, i) => ({
            hash: sha256(key),
            identity: { id: `config-${i + 1}`, name: `configured key ${i + 1}` },
        }));
    }
    /** `version`: the store's dataVersion as the request began (remembered keys hold only at it). */
    async verify(presented, version) {
        const known = this.remembered.get(presented);
        if (known !== undefined &&
            (known.version === -1 || known.version === version) &&
            (known.record === null || this.isActive(known.record))) {
            return known.identity;
        }
        const m = KEY_PATTERN.exec(presented);
        if (m) {
            const record = await this.store.findApiKey(m[1]);
            if (record && timingSafeEqual(record.secretHash, sha256(m[2])) && this.isActive(record)) {
                const identity = { id: record.id, name: record.name };
                if (version !== undefined)
                    this.remember(presented, { version, identity, record });
                return identity;
            }
        }
        // Hashing first makes every comparison the same length, so timingSafeEqual applies.
        const hash = sha256(presented);
        let match = null;
        for (const k of this.configuredKeys) {
            if (timingSafeEqual(k.hash, hash))
                match = k.identity;
        }
        if (match !== null)
            this.remember(presented, { version: -1, identity: match, record: null });
        return match;
    }
    remember(presented, entry) {
        if (this.remembered.size >= MAX_REMEMBERED_KEYS)
            this.remembered.clear();
        this.remembered.set(presented, entry);
    }
    isActive(record) {
        const now = this.clock.now().getTime();
        if (record.revokedAt !== null)
            return false;
        return record.expiresAt === null || record.expiresAt.getTime() > now;
    }
}
//# sourceMappingURL=api-keys.js.map