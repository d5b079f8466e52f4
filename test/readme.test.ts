import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { settings } from '../src/config.js'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

test('the README settings table lists exactly the settings the code accepts', () => {
  const expected = settings.map(
    (s) =>
      `| \`${s.env}\` | ${s.default === '' ? '(unset)' : `\`${s.default}\``} | ${s.accepts} | ${s.description} |`,
  )
  const documented = readme.split('\n').filter((line) => /^\| `[A-Z0-9_]+` \|/.test(line))
  assert.deepEqual(documented, expected)
})

test('the README gives the two set-up commands, and CI runs the test one', () => {
  assert.match(readme, /```sh\nnpm ci && npm start\n```/)
  assert.match(readme, /```sh\nnpm run system-deps && npm cit\n```/)
  const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8')
  assert.match(ci, /^npm run system-deps && npm cit$/m)
})
