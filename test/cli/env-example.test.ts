// .env.example is the settings table as it is now: every setting at its default, described.
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { ENV_EXAMPLE_PATH } from '../../scripts/env-example.js'
import { envExample } from '../../src/cli/settings-help.js'
import { loadConfig, settings } from '../../src/config.js'
import { storeIndependent } from '../support/stores.js'
import { tempDir } from '../support/workspace.js'

storeIndependent(() => {
  test('.env.example is what `npm run env:example` makes from the settings table', () => {
    const committed = readFileSync(ENV_EXAMPLE_PATH, 'utf8')
    const generated = envExample()
    const a = committed.split('\n')
    const b = generated.split('\n')
    const differs = a.findIndex((line, i) => line !== b[i])
    assert.ok(
      committed === generated,
      `.env.example is out of step with src/config.ts: run \`npm run env:example\`.\n` +
        `First difference at line ${(differs === -1 ? a.length : differs) + 1}:\n` +
        `  file:      ${JSON.stringify(a[differs])}\n  generated: ${JSON.stringify(b[differs])}`,
    )
  })

  test('it names every setting once, described, and uncommented it gives the defaults', (t) => {
    const text = envExample()
    const assignments = text.split('\n').filter((line) => /^#[A-Z0-9_]+=/.test(line))
    assert.deepEqual(
      assignments,
      settings.map((s) => `#${s.env}=${s.default}`),
    )
    // Each block after the head: the description and what it accepts, wrapped, then the line.
    const blocks = text.trimEnd().split('\n\n').slice(1)
    assert.deepEqual(
      blocks.map((block) => {
        const lines = block.split('\n')
        return [
          lines
            .slice(0, -1)
            .map((l) => l.slice(2))
            .join(' '),
          lines.at(-1),
        ]
      }),
      settings.map((s) => [`${s.description} Accepts ${s.accepts}.`, `#${s.env}=${s.default}`]),
    )
    const path = join(tempDir(t), '.env')
    writeFileSync(path, assignments.map((line) => line.slice(1)).join('\n'))
    assert.deepEqual(loadConfig({}, path), loadConfig({}, null))
  })
})
