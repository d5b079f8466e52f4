// The api_keys table as both adapters read it, mapped to the domain record in one place.
import type { ApiKeyRecord } from './store.js'

export interface ApiKeyRow {
  /** Null only in the row keyLookupSql gives for a missing key. */
  id: string
  name: string
  secret_hash: Buffer
  created_at: bigint
  expires_at: bigint | null
  revoked_at: bigint | null
}

/**
 * A key by id (`wanted`) as one row whether it exists or not (`id` null), so that the time of a
 * refusal does not tell whether a key id exists. `hash32`: the dialect's 32 zero bytes.
 */
export const keyLookupSql = (hash32: string, wanted: string) =>
  `SELECT k.id AS id, coalesce(k.name, '') AS name,
     coalesce(k.secret_hash, ${hash32}) AS secret_hash, coalesce(k.created_at, 0) AS created_at,
     k.expires_at AS expires_at, k.revoked_at AS revoked_at
   FROM (SELECT ${wanted} AS wanted) AS w LEFT JOIN api_keys AS k ON k.id = w.wanted`

/** The record of a lookup by keyLookupSql; null for the row of a missing key. */
export function foundApiKey(row: ApiKeyRow | undefined): ApiKeyRecord | null {
  if (row === undefined) return null
  // Mapped either way, so that a missing key id takes the same time as a refused one.
  const record = toApiKey(row)
  return row.id === null ? null : record
}

/** A record's column values in the table's order (id, name, secret_hash, then the instants). */
export const apiKeyValues = (k: ApiKeyRecord) =>
  [
    k.id,
    k.name,
    k.secretHash,
    k.createdAt.getTime(),
    k.expiresAt?.getTime() ?? null,
    k.revokedAt?.getTime() ?? null,
  ] as const

const toDate = (ms: bigint | null): Date | null => (ms === null ? null : new Date(Number(ms)))

export const toApiKey = (row: ApiKeyRow): ApiKeyRecord => ({
  id: row.id,
  name: row.name,
  secretHash: row.secret_hash,
  createdAt: new Date(Number(row.created_at)),
  expiresAt: toDate(row.expires_at),
  revokedAt: toDate(row.revoked_at),
})
