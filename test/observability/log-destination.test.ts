// The log destination: lines land in order, once per event-loop turn or when the buffer fills,
// and a failed output stops logging without throwing into a request.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { LogDestination } from '../../src/observability/log-destination.js'
import { storeIndependent } from '../support/stores.js'
import { tempDir } from '../support/workspace.js'

storeIndependent(() => {
  describe('LogDestination', () => {
    test('holds the lines of one turn and writes them, in order, at its end', async (t) => {
      const path = join(tempDir(t), 'log')
      const fd = openSync(path, 'w')
      t.after(() => closeSync(fd))
      const dest = new LogDestination(fd)
      dest.write('{"n":1}\n')
      dest.write('{"n":2}\n')
      assert.equal(readFileSync(path, 'utf8'), '')
      await nextTurn()
      assert.equal(readFileSync(path, 'utf8'), '{"n":1}\n{"n":2}\n')
      dest.write('{"n":3,"é":"ü"}\n')
      dest.flushSync()
      assert.equal(readFileSync(path, 'utf8'), '{"n":1}\n{"n":2}\n{"n":3,"é":"ü"}\n')
    })

    test('writes at once when 64 KiB are pending, without waiting for the turn to end', (t) => {
      const path = join(tempDir(t), 'log')
      const fd = openSync(path, 'w')
      t.after(() => closeSync(fd))
      const dest = new LogDestination(fd)
      const line = `${'x'.repeat(1023)}\n`
      for (let i = 0; i < 63; i++) dest.write(line)
      assert.equal(readFileSync(path, 'utf8').length, 0)
      dest.write(line)
      assert.equal(readFileSync(path, 'utf8'), line.repeat(64))
    })

    test('a process that exits right after logging still writes its last lines', () => {
      const module = fileURLToPath(
        new URL('../../src/observability/log-destination.ts', import.meta.url),
      )
      const script = `import { LogDestination } from ${JSON.stringify(module)}
const d = new LogDestination(1); d.write('last words\\n'); process.exit(3)`
      const run = spawnSync(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        {
          encoding: 'utf8',
        },
      )
      assert.equal(run.status, 3)
      assert.equal(run.stdout, 'last words\n')
    })

    test('an output that fails stops logging with one message, and writes never throw', async (t) => {
      const path = join(tempDir(t), 'log')
      closeSync(openSync(path, 'w'))
      const fd = openSync(path, 'r') // read-only: every write fails with EBADF
      t.after(() => closeSync(fd))
      const messages: string[] = []
      const original = process.stderr.write.bind(process.stderr)
      process.stderr.write = ((chunk: string) => {
        messages.push(String(chunk))
        return true
      }) as typeof process.stderr.write
      try {
        const dest = new LogDestination(fd)
        dest.write('a\n')
        dest.flushSync()
        dest.write('b\n')
        dest.flushSync()
      } finally {
        process.stderr.write = original
      }
      assert.equal(messages.length, 1)
      assert.match(messages[0]!, /^petstore: log output failed, logging stops: Error: EBADF/)
    })
  })
})
