// The api_keys table on SQLite.
import type Database from 'better-sqlite3'
import * as keyRow from '../api-key-row.js'
import type { ApiKeyRecord } from '../store.js'

export class SqliteApiKeys {
  private readonly insertOne
  private readonly findOne
  private readonly listAll
  private readonly revokeOne
  private readonly countAll

  constructor(db: Database.Database) {
    this.insertOne = db.prepare<[string, string, Buffer, number, number | null, number | null]>(
      'INSERT INTO api_keys (id, name, secret_hash, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)',
    )
    this.findOne = db.prepare<[string], keyRow.ApiKeyRow>(keyRow.keyLookupSql('zeroblob(32)', '?'))
    this.listAll = db.prepare<[], keyRow.ApiKeyRow>(
      'SELECT * FROM api_keys ORDER BY created_at, id',
    )
    this.revokeOne = db.prepare<[number, string]>(
      'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
    )
    this.countAll = db.prepare<[], { n: bigint }>('SELECT count(*) AS n FROM api_keys')
  }

  insert(k: ApiKeyRecord): void {
    this.insertOne.run(...keyRow.apiKeyValues(k))
  }

  find(id: string): ApiKeyRecord | null {
    return keyRow.foundApiKey(this.findOne.get(id))
  }

  list(): ApiKeyRecord[] {
    return this.listAll.all().map(keyRow.toApiKey)
  }

  /** True when the key was there and not yet revoked. */
  revoke(id: string, at: Date): boolean {
    return this.revokeOne.run(at.getTime(), id).changes > 0
  }

  count(): number {
    return Number(this.countAll.get()!.n)
  }
}
