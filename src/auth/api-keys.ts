// API keys: how they are made, how they look, and how a presented key is checked.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { LruMap } from 'toad-cache'
import type { Clock } from '../clock.js'
import type { ApiKeyRecord, Deadline, Store } from '../storage/store.js'

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

/** A key that matched: a stored one with its record and the keys dataVersion it was read at. */
type Remembered = { identity: AuthenticatedKey; record: ApiKeyRecord | null; version?: number }

/** Checks presented keys against stored keys and against keys given in configuration. */
export class ApiKeyVerifier {
  private readonly configuredKeys: { hash: Buffer; identity: AuthenticatedKey }[]
  /**
   * Keys that matched, by the presented text, so a client's next request skips lookup and hashing.
   * A stored key's entry holds only at the keys dataVersion it was read at, so a change to keys
   * anywhere (another process's revocation too) sends the next request back to the store. Only
   * keys that matched get in; the least recently used goes first.
   */
  private readonly remembered = new LruMap<Remembered>(10_000)
  /** Checks under way, by the presented text: at most one per key and version at a time. */
  private readonly checking = new Map<
    string,
    { version: number | undefined; result: Promise<AuthenticatedKey | null> }
  >()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    configuredKeys: readonly string[],
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
  verify(
    presented: string,
    version?: number,
    deadline?: Deadline,
  ): Promise<AuthenticatedKey | null> {
    const known = this.remembered.get(presented)
    // A configured key (no record) holds at any version.
    if (
      known &&
      (known.record === null || (known.version === version && this.isActive(known.record)))
    ) {
      return Promise.resolve(known.identity)
    }
    // The requests of one turn share its version: while one checks a key, the others wait for it.
    const pending = this.checking.get(presented)
    if (pending !== undefined && pending.version === version) return pending.result
    const result = this.check(presented, version, deadline).finally(() => {
      if (this.checking.get(presented)?.result === result) this.checking.delete(presented)
    })
    this.checking.set(presented, { version, result })
    return result
  }

  private async check(
    presented: string,
    version: number | undefined,
    deadline: Deadline | undefined,
  ): Promise<AuthenticatedKey | null> {
    const m = KEY_PATTERN.exec(presented)
    if (m) {
      const record = await this.store.findApiKey(m[1]!, deadline)
      // An unknown id costs the same hash and comparison as a wrong secret: the answer's timing
      // does not tell which key ids exist.
      const stored = record?.secretHash ?? UNKNOWN_KEY_HASH
      if (timingSafeEqual(stored, sha256(m[2]!)) && record && this.isActive(record)) {
        const identity = { id: record.id, name: record.name }
        if (version !== undefined) this.remembered.set(presented, { identity, record, version })
        return identity
      }
    }
    // Hashing first makes every comparison the same length, so timingSafeEqual applies.
    const hash = sha256(presented)
    let match: AuthenticatedKey | null = null
    for (const k of this.configuredKeys) {
      if (timingSafeEqual(k.hash, hash)) match = k.identity
    }
    if (match !== null) this.remembered.set(presented, { identity: match, record: null })
    return match
  }

  private isActive(record: ApiKeyRecord): boolean {
    if (record.revokedAt !== null) return false
    return record.expiresAt === null || record.expiresAt.getTime() > this.clock.nowMs()
  }
}
