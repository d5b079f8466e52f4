// `petstore keys create|list|revoke`: the same key functions the service uses, straight on the store.
import { type Command, InvalidArgumentError } from 'commander'
import { createApiKey } from '../auth/api-keys.js'
import { durationParser } from '../duration.js'
import { clockFor } from '../server.js'
import type { ApiKeyRecord } from '../storage/store.js'
import { UsageError, withStore } from './command-context.js'

/** `90s`, `30m`, `12h`, `30d`, `2w`: from 1 to 9,999,999 of a unit, written without a leading zero. */
const keyLifetime = durationParser(['s', 'm', 'h', 'd', 'w'], '[1-9][0-9]{0,6}')

function durationArg(text: string): number {
  const ms = keyLifetime(text)
  if (ms === null)
    throw new InvalidArgumentError('expected a duration such as 90s, 30m, 12h, 30d or 2w')
  return ms
}

function nameArg(text: string): string {
  if (!/^[\x20-\x7e]{1,100}$/.test(text) || text.trim() === '') {
    throw new InvalidArgumentError('expected 1 to 100 printable ASCII characters')
  }
  return text
}

function keyState(k: ApiKeyRecord, now: Date): string {
  if (k.revokedAt) return 'revoked'
  if (k.expiresAt && k.expiresAt.getTime() <= now.getTime()) return 'expired'
  return 'active'
}

/** Columns two spaces apart, each as wide as its widest cell; no trailing blanks. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  const lines = rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  '))
  return lines.map((line) => line.trimEnd()).join('\n')
}

/** `keys list`'s output, without its final newline. */
function listing(keys: ApiKeyRecord[], now: Date, json: boolean): string {
  const rows = keys.map((k) => ({
    id: k.id,
    name: k.name,
    state: keyState(k, now),
    createdAt: k.createdAt.toISOString(),
    expiresAt: k.expiresAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
  }))
  if (json) return JSON.stringify(rows, null, 2)
  if (rows.length === 0) return 'No API keys.'
  const cells = rows.map((r) => [r.id, r.name, r.state, r.createdAt, r.expiresAt ?? '-'])
  return table([['ID', 'NAME', 'STATE', 'CREATED', 'EXPIRES'], ...cells])
}

export function addKeysCommand(program: Command): void {
  const keys = program.command('keys').description('manage API keys')
  keys
    .command('create')
    .description('create a key and print it once, alone on the last line')
    .requiredOption('--name <name>', 'who or what the key is for', nameArg)
    .option(
      '--expires-in <duration>',
      'lifetime, e.g. 30d, 12h, 2w (default: no expiry)',
      durationArg,
    )
    .action((opts: { name: string; expiresIn?: number }) =>
      withStore(async (store, cfg) => {
        const clock = clockFor(cfg)
        const { expiresIn } = opts
        const expiresAt =
          expiresIn === undefined ? null : new Date(clock.now().getTime() + expiresIn)
        const { key, record } = await createApiKey(store, clock, opts.name, expiresAt)
        const expiry = expiresAt ? `expiring ${expiresAt.toISOString()}` : 'with no expiry'
        // The key alone on the last line, so a script can capture it with `tail -n 1`.
        process.stdout.write(
          `Created API key ${record.id} named "${record.name}", ${expiry}.\n` +
            `Store it now: it is shown only this once.\n${key}\n`,
        )
      }),
    )
  keys
    .command('list')
    .description('list keys (ids, names, states; never the keys themselves)')
    .option('--json', 'print JSON instead of a table')
    .action((opts: { json?: boolean }) =>
      withStore(async (store, cfg) => {
        const now = clockFor(cfg).now()
        process.stdout.write(`${listing(await store.listApiKeys(), now, opts.json === true)}\n`)
      }),
    )
  keys
    .command('revoke')
    .description('revoke a key by id; it is refused from its next request on')
    .argument('<id>', 'the key id shown by `keys list`')
    .action((id: string) =>
      withStore(async (store, cfg) => {
        if (!(await store.revokeApiKey(id, clockFor(cfg).now()))) {
          throw new UsageError(`no active API key with id ${id}`)
        }
        process.stdout.write(`Revoked API key ${id}. Requests with it are refused from now on.\n`)
      }),
    )
}
