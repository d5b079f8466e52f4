// `petstore keys`: the same key functions the service uses, straight on the store.
import { createApiKey } from '../auth/api-keys.js'
import type { Clock } from '../clock.js'
import type { ApiKeyRecord, Store } from '../storage/store.js'

export async function createKeyCommand(
  store: Store,
  clock: Clock,
  name: string,
  expiresInMs: number | null,
  out: NodeJS.WritableStream,
): Promise<void> {
  const now = clock.now()
  const expiresAt = expiresInMs === null ? null : new Date(now.getTime() + expiresInMs)
  const { key, record } = await createApiKey(store, clock, name, expiresAt)
  out.write(`Created API key ${record.id} named "${record.name}"`)
  out.write(expiresAt ? `, expiring ${expiresAt.toISOString()}.\n` : ', with no expiry.\n')
  out.write('Store it now: it is shown only this once.\n')
  // Alone on the last line, so a script can capture it with `tail -n 1`.
  out.write(`${key}\n`)
}

function keyState(k: ApiKeyRecord, now: Date): string {
  if (k.revokedAt) return 'revoked'
  if (k.expiresAt && k.expiresAt.getTime() <= now.getTime()) return 'expired'
  return 'active'
}

export async function listKeysCommand(
  store: Store,
  clock: Clock,
  json: boolean,
  out: NodeJS.WritableStream,
): Promise<void> {
  const now = clock.now()
  const rows = (await store.listApiKeys()).map((k) => ({
    id: k.id,
    name: k.name,
    state: keyState(k, now),
    createdAt: k.createdAt.toISOString(),
    expiresAt: k.expiresAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
  }))
  if (json) {
    out.write(`${JSON.stringify(rows, null, 2)}\n`)
    return
  }
  if (rows.length === 0) {
    out.write('No API keys.\n')
    return
  }
  const table = [
    ['ID', 'NAME', 'STATE', 'CREATED', 'EXPIRES'],
    ...rows.map((r) => [r.id, r.name, r.state, r.createdAt, r.expiresAt ?? '-']),
  ]
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)))
  const lines = table.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  '))
  out.write(`${lines.map((line) => line.trimEnd()).join('\n')}\n`)
}

export async function revokeKeyCommand(
  store: Store,
  clock: Clock,
  id: string,
  out: NodeJS.WritableStream,
): Promise<boolean> {
  const revoked = await store.revokeApiKey(id, clock.now())
  if (revoked) out.write(`Revoked API key ${id}. Requests with it are refused from now on.\n`)
  return revoked
}
