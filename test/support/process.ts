import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/** The test's environment without any setting of the service, so only what a test sets applies. */
export function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('PETSTORE_') && name !== 'PORT' && name !== 'HOST') env[name] = value
  }
  return env
}

/**
 * The key a first start wrote to `<dir>/bootstrap-key`: in the tests its stdout is a pipe, not a
 * terminal, so the key is in that file (beside the SQLite file, or in the working directory).
 */
export function bootstrapKey(dir: string): string {
  return readFileSync(join(dir, 'bootstrap-key'), 'utf8').trimEnd()
}
