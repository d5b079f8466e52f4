// The first start's API key: made when no key exists at all, shown once, only its hash stored.
import { open, rm } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { createApiKey, generateApiKey } from './auth/api-keys.js'
import type { Clock } from './clock.js'
import { type Config, ConfigError } from './config.js'
import { sqlitePathOf } from './storage/open-store.js'
import type { Store } from './storage/store.js'

/** Where the bootstrap key is written when there is no terminal to show it on. */
export function bootstrapKeyPath(config: Pick<Config, 'bootstrapKeyFile' | 'databaseUrl'>): string {
  if (config.bootstrapKeyFile !== null) return resolve(config.bootstrapKeyFile)
  const sqlitePath = sqlitePathOf(config.databaseUrl) ?? ':memory:'
  return sqlitePath === ':memory:'
    ? resolve('bootstrap-key')
    : join(dirname(resolve(sqlitePath)), 'bootstrap-key')
}

/** What an operator is told beside the code of a path that cannot be made. */
const PATH_HINTS: Record<string, string> = {
  ENOENT: ': its folder does not exist',
  ENOTDIR: ': a file is in the way',
}

/**
 * Writes `text` to a new file only this user can read, durably. An existing file, or a link in
 * its place, is never followed or overwritten. `configured`: PETSTORE_BOOTSTRAP_KEY_FILE as set,
 * whose path, when no file can be made there, is a mistake in the settings.
 */
async function writeSecretFile(
  path: string,
  text: string,
  configured: string | null,
): Promise<void> {
  let file: Awaited<ReturnType<typeof open>>
  try {
    file = await open(path, 'wx', 0o600)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') {
      throw new Error(
        `${path} already exists: a bootstrap key is only written to a new file; remove it (its key belongs to an earlier database) or set PETSTORE_BOOTSTRAP_KEY_FILE`,
      )
    }
    if (configured !== null) {
      throw new ConfigError([
        `PETSTORE_BOOTSTRAP_KEY_FILE=${JSON.stringify(configured)} cannot be used: cannot create ${path} (${code ?? (err as Error).message}${PATH_HINTS[code ?? ''] ?? ''})`,
      ])
    }
    throw new Error(
      `cannot write the bootstrap key to ${path} (${code ?? (err as Error).message}); set PETSTORE_BOOTSTRAP_KEY_FILE, or create a key first with \`petstore keys create\``,
    )
  }
  try {
    await file.writeFile(text)
    await file.sync()
  } catch (err) {
    await file.close()
    await rm(path, { force: true })
    throw err
  }
  await file.close()
}

/** Stdout is a log that others keep: the key goes to a new private file, only its path is printed. */
async function writeKeyToFile(
  config: Config,
  store: Store,
  clock: Clock,
  out: NodeJS.WritableStream,
): Promise<void> {
  const { key, record } = generateApiKey('bootstrap', clock.now(), null)
  const path = bootstrapKeyPath(config)
  // The file first: a key stored but never written would be lost, and no other made.
  await writeSecretFile(path, `${key}\n`, config.bootstrapKeyFile)
  try {
    await store.insertApiKey(record)
  } catch (err) {
    await rm(path, { force: true })
    throw err
  }
  out.write(
    `petstore: no API key existed, so one was created (id ${record.id}); the bootstrap API key was written to ${path}, readable only by this user\n`,
  )
}

async function printKey(store: Store, clock: Clock, out: NodeJS.WritableStream): Promise<void> {
  const { key, record } = await createApiKey(store, clock, 'bootstrap')
  out.write(
    [
      '',
      '================================================================',
      ' No API key existed, so one was created. It is shown only now:',
      '',
      `   ${key}`,
      '',
      ` Key id: ${record.id}. Manage keys with \`petstore keys\`.`,
      '================================================================',
      '',
    ].join('\n'),
  )
}

/** First start with no key at all: make one and show it once, on a terminal or in a file. */
export async function ensureBootstrapKey(
  config: Config,
  store: Store,
  clock: Clock,
  out: NodeJS.WritableStream,
) {
  if (config.apiKeys.length > 0 || (await store.countApiKeys()) > 0) return
  if ((out as Partial<NodeJS.WriteStream>).isTTY !== true) {
    await writeKeyToFile(config, store, clock, out)
    return
  }
  await printKey(store, clock, out)
}
