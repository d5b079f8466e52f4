// The logs of a real `petstore serve` process: JSON lines with what an operator needs, a readable
// form on request, and never a key, a secret or an Authorization header value in either.
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import { configWith } from '../../src/config.js'
import { LogDestination } from '../../src/observability/log-destination.js'
import { isPretty, loggerOptions } from '../../src/observability/logging.js'
import { bootstrapKey, LISTENING_LINE, spawnService, startService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { tempDir } from '../support/workspace.js'

const KEY = /pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}/

/** The first start's notice: where the bootstrap key went (its output is not a terminal). */
const BOOTSTRAP_NOTICE = /^petstore: no API key existed, so one was created .*\n/gm

interface Call {
  method: string
  path: string
  status: number
  operation: string
  requestId: string
}

interface Run {
  /** stdout without the bootstrap key's notice and the line saying where the API listens. */
  logs: string
  stderr: string
  calls: Call[]
  /** Every key, secret and Authorization value the run sent. */
  secrets: string[]
}

/**
 * First start of a server (so it makes the bootstrap key), a second key made with `keys create`
 * meanwhile, requests with valid, invalid and Basic credentials, then SIGTERM.
 */
async function run(t: TestContext, format: 'json' | 'pretty'): Promise<Run> {
  const dir = tempDir(t, 'petstore-logging-')
  const server = await startService(t, { cwd: dir, env: { PETSTORE_LOG_FORMAT: format } })
  const origin = server.origin
  const bootstrap = bootstrapKey(dir)

  const created = spawnService(t, { args: ['keys', 'create', '--name', 'alice-app'], cwd: dir })
  assert.deepEqual(await created.exited, { code: 0, signal: null }, created.stderr())
  const alice = created.stdout().trimEnd().split('\n').at(-1)!
  assert.match(alice, KEY)

  const unknownKey = 'pet_0123456789ab_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB'
  const notAKey = 'some-long-secret-that-is-not-a-key'
  const basic = `Basic ${Buffer.from('admin:hunter2-password').toString('base64')}`
  const calls: Call[] = []
  const call = async (
    method: string,
    path: string,
    operation: string,
    authorization: string | null,
    body?: string,
  ) => {
    const headers: Record<string, string> = authorization ? { authorization } : {}
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${origin}${path}`, { method, headers, body })
    await res.arrayBuffer()
    calls.push({
      method,
      path,
      status: res.status,
      operation,
      requestId: String(res.headers.get('x-request-id')),
    })
  }
  await call('GET', '/v1/pets', 'listPets', `Bearer ${bootstrap}`)
  await call('POST', '/v1/pets', 'createPet', `Bearer ${alice}`, '{"name":"Rex","categoryId":7}')
  await call('GET', '/v1/pets/1', 'getPet', `Bearer ${alice}`)
  await call('GET', '/v1/pets', 'listPets', `Bearer ${unknownKey}`)
  await call('GET', '/v1/pets/1', 'getPet', `Bearer ${notAKey}`)
  await call('GET', '/v1/pets', 'listPets', basic)
  await call('GET', '/v1/nowhere', 'unknown', `Bearer ${bootstrap}`)
  assert.deepEqual(
    calls.map((c) => c.status),
    [200, 201, 200, 401, 401, 401, 404],
  )

  server.child.kill('SIGTERM')
  // A clean exit, and the last line written before it is not lost.
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr())
  const stdout = server.stdout()
  assert.equal(stdout.match(BOOTSTRAP_NOTICE)?.length, 1, 'the notice is printed exactly once')
  const logs = stdout
    .replace(BOOTSTRAP_NOTICE, '')
    .split('\n')
    .filter((line) => !LISTENING_LINE.test(line))
    .join('\n')

  const secret = (key: string) => key.slice('pet_0123456789ab_'.length)
  const secrets = [bootstrap, alice, unknownKey, notAKey, basic]
  secrets.push(secret(bootstrap), secret(alice), secret(unknownKey))
  secrets.push(basic.slice('Basic '.length), 'hunter2-password')
  return { logs, stderr: server.stderr(), calls, secrets }
}

function assertNoSecrets(r: Run): void {
  for (const [name, text] of [
    ['stdout', r.logs],
    ['stderr', r.stderr],
  ] as const) {
    for (const s of r.secrets) {
      assert.equal(text.includes(s), false, `${name} leaks ${s}:\n${text}`)
    }
    assert.equal(/authorization/i.test(text), false, `${name} names the Authorization header`)
    assert.equal(KEY.test(text), false, `${name} holds something shaped like a key`)
  }
}

storeIndependent(() => {
  describe('logs of a running service', () => {
    test('JSON: every line is JSON, one per request with its id, operation, status and duration', async (t) => {
      const r = await run(t, 'json')
      const lines = r.logs.split('\n').filter((line) => line !== '')
      for (const line of lines) {
        assert.doesNotThrow(() => JSON.parse(line), `not a JSON line: ${line}`)
      }
      const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      const requests = entries.filter((e) => e.msg === 'request completed')
      assert.deepEqual(
        requests.map((e) => ({
          requestId: e.requestId,
          operation: e.operation,
          method: e.method,
          url: e.url,
          status: e.status,
        })),
        r.calls.map((c) => ({
          requestId: c.requestId,
          operation: c.operation,
          method: c.method,
          url: c.path,
          status: c.status,
        })),
      )
      for (const e of requests) {
        assert.equal(typeof e.durationMs, 'number')
        assert.ok((e.durationMs as number) >= 0)
        assert.equal(e.level, 30)
      }
      assert.deepEqual(
        requests.map((e) => e.apiKeyName),
        ['bootstrap', 'alice-app', 'alice-app', undefined, undefined, undefined, 'bootstrap'],
      )
      const deprecated = entries.filter((e) => e.msg === 'deprecated operation called')
      assert.deepEqual(
        deprecated.map((e) => [e.requestId, e.deprecatedOperation, e.apiKeyName, e.level]),
        [[r.calls[2]!.requestId, 'getPet', 'alice-app', 40]],
      )
      assert.equal(entries.at(-1)?.msg, 'draining before exit')
      assertNoSecrets(r)
    })

    test('pretty: readable lines, not JSON, naming each operation', async (t) => {
      const r = await run(t, 'pretty')
      const lines = r.logs.split('\n').filter((line) => line !== '')
      for (const line of lines) {
        assert.throws(() => JSON.parse(line), SyntaxError, `a JSON line in pretty output: ${line}`)
        assert.match(line, /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (INFO|WARN): /, line)
      }
      const request =
        /^\[[\d:.]+\] INFO: (\S+) (\S+) (\d{3}) (\S+) [\d.]+ms request completed \{.*"requestId":"([^"]+)"/
      assert.deepEqual(
        lines
          .map((line) => request.exec(line))
          .filter((m) => m !== null)
          .map((m) => ({
            method: m[1],
            path: m[2],
            status: Number(m[3]),
            operation: m[4],
            requestId: m[5],
          })),
        r.calls,
      )
      assert.equal(
        lines.filter((line) =>
          /WARN: deprecated operation called .*"apiKeyName":"alice-app"/.test(line),
        ).length,
        1,
      )
      assert.match(
        lines.at(-1)!,
        /INFO: draining before exit \{"signal":"SIGTERM","drainDelayMs":0\}$/,
      )
      // Not a terminal: no colour codes.
      assert.equal(r.logs.includes('\u001b['), false)
      assertNoSecrets(r)
    })
  })

  describe('log format choice', () => {
    test('auto is readable on a terminal and JSON otherwise; json and pretty are fixed', () => {
      assert.equal(isPretty('auto', true), true)
      assert.equal(isPretty('auto', false), false)
      assert.equal(isPretty('pretty', false), true)
      assert.equal(isPretty('json', true), false)
      const json = loggerOptions(configWith({ logFormat: 'auto' }), { isTTY: false })
      assert.ok(json.stream instanceof LogDestination)
      const pretty = loggerOptions(configWith({ logFormat: 'auto' }), { isTTY: true })
      assert.ok(pretty.stream !== undefined && !(pretty.stream instanceof LogDestination))
      // Both censor the Authorization header, should anything ever log request headers.
      assert.deepEqual(json.redact, pretty.redact)
    })
  })
})
