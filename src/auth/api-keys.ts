// API keys: how they are made, how they look, and how a presented key is checked.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { ApiKeyRecord, Deadline, SameTurnReads, Store } from '../storage/store.js'

/**
 * A key reads `pet_<id>_<secret>`: the id finds the record without a table scan, and only the
 * SHA-256 of the secret is stored. The secret has 256 bits of entropy, so a fast hash is enough.
 */
const KEY_PATTERN = /^pet_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/

export interface AuthenticatedKey {
  id: string
  name: string
}

export interface CreatedKey {
  key: string
  record: ApiKeyRecord
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest()

/** Compared against when a key id is unknown; no secret hashes to it that anyone knows. */
const UNKNOWN_KEY_HASH = sha256(randomBytes(32).toString('base64url'))

export function generateApiKey(name: string, now: Date, expiresAt: Date | null): CreatedKey {
  const id = randomBytes(6).toString('hex')
  const secret = randomBytes(32).toString('base64url')
  return {
    key: `pet_${id}_${secret}`,
    record: { id, name, secretHash: sha256(secret), createdAt: now, expiresAt, revokedAt: null },
  }
}

export async function createApiKey(
  store: Store,
  clock: Clock,
  name: string,
  expiresAt: Date | null = null,
): Promise<CreatedKey> {
  const created = generateApiKey(name, clock.now(), expiresAt)
  await store.insertApiKey(created.record)
  return created
}

/** Keys remembered at most; past it the memory starts afresh (only keys that matched get in). */
const MAX_REMEMBERED_KEYS = 10_000

interface Remembered {
  /** The keys part of the store's dataVersion when the record was read; -1 for configured keys. */
  version: number
  identity: AuthenticatedKey
  /** null for a configured key (always active). */
  record: ApiKeyRecord | null
}

/** Checks presented keys against stored keys and against keys given in configuration. */
export class ApiKeyVerifier {
  private readonly configuredKeys: { hash: Buffer; identity: AuthenticatedKey }[]
  /**
   * Keys that matched, by the presented text, so a client's next request skips lookup and hashing.
   * A stored key's entry holds only at the keys dataVersion it was read at, so a change to keys
   * anywhere (another process's revocation too) sends the next request back to the store.
   */
  private readonly remembered = new Map<string, Remembered>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    configuredKeys: readonly string[],
    /** A store's reads in the same turn (SQLite): a remembered key is read again at a newer version. */
    private readonly sameTurnReads?: SameTurnReads,
  ) {
    this.configuredKeys = configuredKeys.map((key, i) => ({
      hash: sha256(key),
      identity: { id: `config-${i + 1}`, name: `configured key ${i + 1}` },
    }))
  }

  /**
   * `version`: dataVersion().keys as the request began (remembered keys hold only at it);
   * `deadline`: the request's, which a lookup in the store shares with its other waits.
   */
  async verify(
    presented: string,
    version?: number,
    deadline?: Deadline,
  ): Promise<AuthenticatedKey | null> {
    const known = this.recall(presented, version)
    if (known !== undefined) return known
    const m = KEY_PATTERN.exec(presented)
    if (m) {
      const record = await this.store.findApiKey(m[1]!, deadline)
      // An unknown id costs the same hash and comparison as a wrong secret: the answer's timing
      // does not tell which key ids exist.
      const stored = record?.secretHash ?? UNKNOWN_KEY_HASH
      if (timingSafeEqual(stored, sha256(m[2]!)) && record && this.isActive(record)) {
        return this.matched(presented, version, record)
      }
    }
    // Hashing first makes every comparison the same length, so timingSafeEqual applies.
    const hash = sha256(presented)
    let match: AuthenticatedKey | null = null
    for (const k of this.configuredKeys) {
      if (timingSafeEqual(k.hash, hash)) match = k.identity
    }
    if (match !== null) this.remember(presented, { version: -1, identity: match, record: null })
    return match
  }

  /**
   * The key's identity when it matched before and still holds at `version`; undefined when only a
   * full check can tell. At a newer version (SQLite's moves with pet writes too) a store that reads
   * without waiting (SameTurnReads) re-reads the record: same hash, still active, no hashing.
   */
  private recall(presented: string, version: number | undefined): AuthenticatedKey | undefined {
    const known = this.remembered.get(presented)
    if (known === undefined) return undefined
    if (known.version === -1 || known.version === version) {
      return known.record === null || this.isActive(known.record) ? known.identity : undefined
    }
    if (version === undefined || known.record === null || this.sameTurnReads === undefined) {
      return undefined
    }
    const record = this.sameTurnReads.findApiKeyNow(known.record.id)
    if (record === null || !record.secretHash.equals(known.record.secretHash)) return undefined
    return this.isActive(record) ? this.matched(presented, version, record) : undefined
  }

  /** Whether the presented text matched a key before (it may have been revoked since). */
  knows(presented: string): boolean {
    return this.remembered.has(presented)
  }

  /** The identity of a stored key that matched, remembered at `version` when there is one. */
  private matched(
    presented: string,
    version: number | undefined,
    record: ApiKeyRecord,
  ): AuthenticatedKey {
    const identity = { id: record.id, name: record.name }
    if (version !== undefined) this.remember(presented, { version, identity, record })
    return identity
  }

  private remember(presented: string, entry: Remembered): void {
    if (this.remembered.size >= MAX_REMEMBERED_KEYS) this.remembered.clear()
    this.remembered.set(presented, entry)
  }

  private isActive(record: ApiKeyRecord): boolean {
    if (record.revokedAt !== null) return false
    return record.expiresAt === null || record.expiresAt.getTime() > this.clock.nowMs()
  }
}
