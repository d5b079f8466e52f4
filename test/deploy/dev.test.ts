// `npm run dev` as a developer runs it: the service from source with readable logs, started again
// when a file it loaded changes, and dist/ (what `npm start` and the tests run) left alone.
import assert from 'node:assert/strict'
import { statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { isRunning, LISTENING_LINE, spawnService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { tempDir } from '../support/workspace.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const API_KEY = 'dev-mode-key-0123456789'
const LISTENING_LINES = new RegExp(LISTENING_LINE.source, 'gm')

storeIndependent(() => {
  test('npm run dev serves with readable logs and starts again when a source file changes', async (t) => {
    const dir = tempDir(t)
    const bundle = statSync(join(ROOT, 'dist', 'main.js')).mtimeMs
    // npm, tsx and the service in a process group of their own, all ended after the test: the
    // service holds the output pipe, so it must go before the harness waits for npm's close.
    let group: number | undefined
    t.after(() => {
      if (group !== undefined && isRunning(-group)) process.kill(-group, 'SIGKILL')
    })
    const dev = spawnService(t, {
      command: 'npm',
      args: ['--prefix', ROOT, 'run', 'dev'],
      cwd: dir,
      detached: true,
      env: { PETSTORE_API_KEYS: API_KEY, PETSTORE_DATABASE_URL: `sqlite:${join(dir, 'pets.db')}` },
    })
    group = dev.pid
    const origins = () => [...dev.stdout().matchAll(LISTENING_LINES)].map((m) => m[1]!)
    await dev.waitFor(LISTENING_LINE)
    const list = (origin: string) =>
      fetch(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${API_KEY}` } })

    const first = await list(origins()[0]!)
    assert.equal(first.status, 200)
    assert.equal(await first.text(), '[]')
    // pino-pretty's line, not JSON: `[HH:MM:SS.mmm] INFO: GET /v1/pets 200 listPets …`.
    await dev.waitFor(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: GET \/v1\/pets 200 listPets /m)
    assert.equal(dev.logLines().length, 0, 'no JSON log line')

    const source = join(ROOT, 'src', 'cli', 'main.ts')
    const now = new Date()
    utimesSync(source, now, now)
    await dev.waitFor((out) => out.includes('change in ./src/cli/main.ts Restarting...'))
    await dev.waitFor(() => origins().length === 2)
    const again = await list(origins()[1]!)
    assert.equal(again.status, 200)
    assert.equal(await again.text(), '[]')
    assert.equal(statSync(join(ROOT, 'dist', 'main.js')).mtimeMs, bundle, 'dist/ untouched')
  })
})
