// The api_keys table on PostgreSQL.
import * as keyRow from '../api-key-row.js'
import type { ApiKeyRecord, Deadline } from '../store.js'
import type { PooledStatements } from './statements.js'

export class PostgresApiKeys {
  constructor(private readonly db: PooledStatements) {}

  async insert(k: ApiKeyRecord): Promise<void> {
    await this.db.query(
      'insert-api-key',
      `INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [...keyRow.apiKeyValues(k)],
    )
  }

  async find(id: string, deadline?: Deadline): Promise<ApiKeyRecord | null> {
    const [row] = await this.db.query<keyRow.ApiKeyRow>(
      'find-api-key',
      keyRow.keyLookupSql(`'\\x${'00'.repeat(32)}'::bytea`, '$1::text'),
      [id],
      deadline,
    )
    return keyRow.foundApiKey(row)
  }

  async list(): Promise<ApiKeyRecord[]> {
    const rows = await this.db.query<keyRow.ApiKeyRow>(
      'list-api-keys',
      'SELECT * FROM api_keys ORDER BY created_at, id',
      [],
    )
    return rows.map(keyRow.toApiKey)
  }

  async revoke(id: string, at: Date): Promise<boolean> {
    const result = await this.db.run({
      text: 'UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',
      values: [at.getTime(), id],
    })
    return result.rowCount === 1
  }

  async count(): Promise<number> {
    const [row] = await this.db.query<{ n: bigint }>(
      'count-api-keys',
      'SELECT count(*) AS n FROM api_keys',
      [],
    )
    return Number(row!.n)
  }
}
