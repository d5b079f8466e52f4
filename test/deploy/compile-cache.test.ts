// The `petstore` executable (src/cli/launch.ts) and Node's compile cache (Node 22.1 and later):
// the service starts and serves through it, writes it at exit where PETSTORE_COMPILE_CACHE says,
// a later run takes it as it is, and a bad or unwritable cache changes nothing but speed. On
// Node 20, which has no compile cache, the same runs write nothing.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import nodeModule from 'node:module'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { call } from '../support/api.js'
import { spawnService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { type RunResult, tempDir, workspace } from '../support/workspace.js'

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
const DEFAULT_DIR = fileURLToPath(new URL('../../dist/compile-cache', import.meta.url))
const USAGE = /^Usage: petstore \[options\] \[command\]\n/
const CACHES = 'enableCompileCache' in nodeModule
const KEY = 'compile-cache-test-key-0123456789'

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

/** Each file under `dir` (Node keeps them in a directory named by its version and flags), by path. */
function cacheFiles(dir: string): Map<string, { ino: number; mtimeMs: number; size: number }> {
  if (!existsSync(dir)) return new Map()
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => join(dir, f))
  return new Map(
    files
      .map((f) => [f, statSync(f)] as const)
      .filter(([, s]) => s.isFile())
      .map(([f, { ino, mtimeMs, size }]) => [f, { ino, mtimeMs, size }]),
  )
}

/** The cache of the bundle itself: by far the largest file. */
function bundleCache(dir: string): string {
  const [largest] = [...cacheFiles(dir)].sort(([, a], [, b]) => b.size - a.size)
  assert.ok(largest !== undefined, `a cache in ${dir}`)
  return largest[0]
}

storeIndependent(() => {
  test('serve runs through the cache: written at exit, then taken as it is', {
    timeout: 60_000,
  }, async (t) => {
    const cache = join(tempDir(t), 'cache')
    const h = workspace(t, { PETSTORE_COMPILE_CACHE: cache, PETSTORE_API_KEYS: KEY })
    for (let run = 1; run <= 2; run++) {
      const before = cacheFiles(cache)
      const service = await h.start()
      const res = await call(service.port, { path: '/v1/pets', key: KEY })
      assert.equal(res.status, 200, res.body)
      assert.deepEqual(await service.stop(), { code: 0, signal: null })
      assert.equal(service.stderr(), '')
      const after = cacheFiles(cache)
      if (!CACHES) {
        assert.equal(existsSync(cache), false, 'Node 20 writes no cache')
      } else if (run === 1) {
        // V8's cache of the 1.9 MB bundle's top level and what it compiles at once: ~500 KB.
        assert.ok(statSync(bundleCache(cache)).size > 100_000)
      } else {
        // Rewritten, a file would be a new one renamed over the old: another inode.
        assert.deepEqual(after, before)
      }
    }
  })

  // Registered only where Node has a compile cache (22.1 and later); the Node 26 run has them.
  if (CACHES)
    test('a cache Node cannot use is replaced, and the run is as without it', async (t) => {
      const dir = tempDir(t)
      assertHelped(await help(t, dir))
      const file = bundleCache(dir)
      const garbage = Buffer.alloc(statSync(file).size, 0x5a)
      writeFileSync(file, garbage)
      assertHelped(await help(t, dir))
      assert.ok(statSync(file).size > 100_000)
      assert.notDeepEqual(readFileSync(file), garbage)
    })

  test('a cache directory that cannot be made leaves the run as it is', async (t) => {
    const blocker = join(tempDir(t), 'a-file')
    writeFileSync(blocker, 'not a directory')
    assertHelped(await help(t, join(blocker, 'cache')))
    assertHelped(await help(t, join(blocker, 'cache')))
  })

  // Registered only where Node has a compile cache (22.1 and later); the Node 26 run has them.
  if (CACHES)
    test('the cache is in dist/compile-cache unless set, and `off` writes none', async (t) => {
      // A V8 flag no other test gives: Node keeps its cache in a directory of its own.
      const flags = ['--stack-size=977']
      const dir = tempDir(t)
      assertHelped(await help(t, dir, flags))
      const [tag] = readdirSync(dir)
      const inDefault = join(DEFAULT_DIR, tag!)
      rmSync(inDefault, { recursive: true, force: true })
      t.after(() => rmSync(inDefault, { recursive: true, force: true }))

      assertHelped(await help(t, 'off', flags))
      assert.equal(existsSync(inDefault), false, 'off writes no cache')
      assert.equal(existsSync(join(process.cwd(), 'off')), false, 'off is not a directory name')

      assertHelped(await help(t, undefined, flags))
      assert.ok(cacheFiles(inDefault).size > 0, 'unset: dist/compile-cache')
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
