// Writes .env.example from the settings table (src/config.ts): run after changing a setting.
//   npm run env:example
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { envExample } from '../src/cli/settings-help.js'

export const ENV_EXAMPLE_PATH = fileURLToPath(new URL('../.env.example', import.meta.url))

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(ENV_EXAMPLE_PATH, envExample())
  process.stdout.write(`wrote ${ENV_EXAMPLE_PATH}\n`)
}
