// The api_keys table as both adapters read it, mapped to the domain record in one place.
import type { ApiKeyRecord } from './store.js'

export interface ApiKeyRow {
  id: string
  name: string
  secret_hash: Buffer
  created_at: bigint
  expires_at: bigint | null
  revoked_at: bigint | null
}

const toDate = (ms: bigint | null): Date | null => (ms === null ? null : new Date(Number(ms)))

export const toApiKey = (row: ApiKeyRow): ApiKeyRecord => ({
  id: row.id,
  name: row.name,
  secretHash: row.secret_hash,
  createdAt: new Date(Number(row.created_at)),
  expiresAt: toDate(row.expires_at),
  revokedAt: toDate(row.revoked_at),
})
