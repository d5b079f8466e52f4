// API keys: how they are made, how they look, and how a presented key is checked.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { ApiKeyRecord, Store } from '../storage/store.js'

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

/** Checks presented keys against stored keys and against keys given in configuration. */
export class ApiKeyVerifier {
  private readonly configuredKeys: { hash: Buffer; identity: AuthenticatedKey }[]

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

  async verify(presented: string): Promise<AuthenticatedKey | null> {
    const m = KEY_PATTERN.exec(presented)
    if (m) {
      const record = await this.store.findApiKey(m[1]!)
      if (record && timingSafeEqual(record.secretHash, sha256(m[2]!)) && this.isActive(record)) {
        return { id: record.id, name: record.name }
      }
    }
    // Hashing first makes every comparison the same length, so timingSafeEqual applies.
    const hash = sha256(presented)
    let match: AuthenticatedKey | null = null
    for (const k of this.configuredKeys) {
      if (timingSafeEqual(k.hash, hash)) match = k.identity
    }
    return match
  }

  private isActive(record: ApiKeyRecord): boolean {
    const now = this.clock.now().getTime()
    if (record.revokedAt !== null) return false
    return record.expiresAt === null || record.expiresAt.getTime() > now
  }
}
