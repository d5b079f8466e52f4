import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { test } from 'node:test'
import { settings } from '../../src/config.js'
import { storeIndependent } from '../support/stores.js'

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8')

storeIndependent(() => {
  test('the settings table of docs/operations.md lists exactly the settings the code accepts', () => {
    const expected = settings.map(
      (s) =>
        `| \`${s.env}\` | ${s.default === '' ? '(unset)' : `\`${s.default}\``} | ${s.accepts} | ${s.description} |`,
    )
    const documented = operations.split('\n').filter((line) => /^\| `[A-Z0-9_]+` \|/.test(line))
    assert.deepEqual(documented, expected)
  })

  test('the README stays a front page: at most 250 lines, every docs page it links to exists', () => {
    assert.ok(readme.split('\n').length <= 250, `${readme.split('\n').length} lines`)
    for (const [, target] of readme.matchAll(/\]\((docs\/[^)#]+)/g)) {
      assert.ok(existsSync(new URL(`../../${target}`, import.meta.url)), target)
    }
  })

  test('the README gives the two set-up commands, and CI runs the test one', () => {
    assert.match(readme, /```sh\nnpm ci && npm start\n```/)
    assert.match(readme, /```sh\nnpm run system-deps && npm install && npm test\n```/)
    const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8')
    assert.match(ci, /^npm run system-deps && npm install && npm test$/m)
  })

  test('no file speaks of how the project was made: figures name hardware, not development runs', () => {
    const made = [
      /\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth) machine\b/i,
      /\b(previous|this|earlier) sessions?\b/i,
      /\bissue \d+\b/i,
      /\bstop \d+\b/i,
    ]
    const root = new URL('../..', import.meta.url)
    const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: root })
      .toString()
      .split('\n')
      .filter((f) => /\.(ts|md|sh|service|conf|json)$|^\.ci\//.test(f))
      .filter((f) => !f.startsWith('docs/spec/') && f !== 'test/deploy/readme.test.ts')
      // Deleted in the working tree, not yet in the index: nothing left to read.
      .filter((f) => existsSync(new URL(f, root)))
    assert.ok(files.length > 100, `${files.length} files`)
    const found = files.flatMap((f) => {
      const text = readFileSync(new URL(f, root), 'utf8')
      return made.filter((re) => re.test(text)).map((re) => `${f}: ${re}`)
    })
    assert.deepEqual(found, [])
  })
})
