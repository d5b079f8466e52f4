// The `petstore` executable's V8 code cache (src/cli/launch.ts): where it is written, that a
// later run takes it rather than writing it again, and that a bad or unwritable cache changes
// nothing but speed. Each run is `node dist/main.js --help`, which loads the whole bundle.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { spawnService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { type RunResult, tempDir } from '../support/workspace.js'

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
const DEFAULT_DIR = fileURLToPath(new URL('../../dist/compile-cache', import.meta.url))
const CACHE_NAME = /^petstore-[0-9a-f]{16}-v\d+\.\d+\.\d+-[a-z0-9]+-[0-9a-f]{12}\.v8$/
const USAGE = /^Usage: petstore \[options\] \[command\]\n/

/** `node <flags> dist/main.js --help` with PETSTORE_COMPILE_CACHE set to `cache` (unset: undefined). */
async function help(
  t: TestContext,
  cache: string | undefined,
  flags: string[] = [],
): Promise<RunResult> {
  const env: Record<string, string> = cache === undefined ? {} : { PETSTORE_COMPILE_CACHE: cache }
  const run = spawnService(t, { command: process.execPath, args: [...flags, MAIN, '--help'], env })
  return { ...(await run.exited), stdout: run.stdout(), stderr: run.stderr() }
}

function assertHelped(run: RunResult): void {
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, USAGE)
  assert.equal(run.stderr, '')
}

storeIndependent(() => {
  test('the first run writes the cache; the next one takes it and leaves it as it is', async (t) => {
    const dir = join(tempDir(t), 'cache')
    assertHelped(await help(t, dir))
    const files = readdirSync(dir)
    assert.equal(files.length, 1, `one cache file, no partial one: ${files.join(', ')}`)
    assert.match(files[0]!, CACHE_NAME)
    const file = join(dir, files[0]!)
    const written = statSync(file)
    // V8's cache of a 1.9 MB bundle with the functions a run compiled: about a megabyte.
    assert.ok(written.size > 100_000, `cache of ${written.size} bytes`)

    assertHelped(await help(t, dir))
    const after = statSync(file)
    // Rewritten, it would be a new file renamed over the old one: another inode.
    assert.equal(after.ino, written.ino)
    assert.equal(after.mtimeMs, written.mtimeMs)
    assert.deepEqual(readdirSync(dir), files)
  })

  test('a cache V8 rejects is replaced, and the run is as without it', async (t) => {
    const dir = tempDir(t)
    assertHelped(await help(t, dir))
    const [name] = readdirSync(dir)
    const file = join(dir, name!)
    const garbage = Buffer.alloc(statSync(file).size, 0x5a)
    writeFileSync(file, garbage)

    assertHelped(await help(t, dir))
    const replaced = statSync(file)
    assert.ok(replaced.size > 100_000, `cache of ${replaced.size} bytes`)
    assert.notDeepEqual(readFileSync(file), garbage)
    assertHelped(await help(t, dir))
    assert.equal(statSync(file).ino, replaced.ino, 'the new cache is taken')
  })

  test('other Node flags get a cache file of their own', async (t) => {
    const dir = tempDir(t)
    assertHelped(await help(t, dir))
    assertHelped(await help(t, dir, ['--max-semi-space-size=4']))
    const files = readdirSync(dir).sort()
    assert.equal(files.length, 2, files.join(', '))
    for (const f of files) assert.match(f, CACHE_NAME)
  })

  test('a cache directory that cannot be made leaves the run as it is', async (t) => {
    const blocker = join(tempDir(t), 'a-file')
    writeFileSync(blocker, 'not a directory')
    assertHelped(await help(t, join(blocker, 'cache')))
    assertHelped(await help(t, join(blocker, 'cache')))
  })

  test('the cache is in dist/compile-cache unless set, and `off` writes none', async (t) => {
    // A flag no other test gives makes a file name of its own in the shared default directory.
    const flags = ['--stack-size=977']
    const dir = tempDir(t)
    assertHelped(await help(t, dir, flags))
    const [name] = readdirSync(dir)
    const inDefault = join(DEFAULT_DIR, name!)
    rmSync(inDefault, { force: true })
    t.after(() => rmSync(inDefault, { force: true }))

    assertHelped(await help(t, 'off', flags))
    assert.equal(existsSync(inDefault), false, 'off writes no cache')
    assert.equal(existsSync(join(process.cwd(), 'off')), false, 'off is not a directory name')

    assertHelped(await help(t, undefined, flags))
    assert.equal(existsSync(inDefault), true, 'unset: dist/compile-cache')
  })

  test('the bundle is strict code, as the ES modules it is built from', () => {
    const bundle = readFileSync(
      fileURLToPath(new URL('../../dist/petstore.cjs', import.meta.url)),
      'utf8',
    )
    // A directive only counts as the first statement: a banner before it would make it a no-op.
    assert.match(bundle, /^'use strict';/)
  })
})
