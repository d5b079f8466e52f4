// Strict OpenAPI tools agree with the document the service serves: Spectral with its OpenAPI and
// OWASP rules (.spectral.yaml) and Redocly's recommended rules (redocly.yaml) find nothing. A rule
// turned off is turned off in those files, each with its reason.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { tempDir, testApp } from '../support/app.js'
import { storeIndependent } from '../support/stores.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name)
const run = promisify(execFile)

/** The served document in a file, with the addresses an operator would configure. */
async function servedDocumentFile(t: Parameters<typeof testApp>[0]): Promise<string> {
  const app = await testApp(t, {
    config: {
      productionUrl: 'https://api.petstore.dev/v1',
      stagingUrl: 'https://staging.petstore.dev/v1',
    },
  })
  const res = await app.app.inject({ method: 'GET', url: '/v1/openapi.json' })
  assert.equal(res.statusCode, 200)
  const file = join(tempDir(t), 'openapi.json')
  writeFileSync(file, res.body)
  return file
}

/** Runs a linter; its findings are its output whatever its exit status. */
async function lint(command: string, args: string[]): Promise<string> {
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
  try {
    return (await run(command, args, { cwd: ROOT, env, maxBuffer: 64 << 20 })).stdout
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string }
    if (!stdout) throw new Error(`${command} failed: ${stderr}`)
    return stdout
  }
}

storeIndependent(() => {
  test('Spectral (OpenAPI and OWASP rules, every severity) finds nothing', async (t) => {
    const file = await servedDocumentFile(t)
    const out = await lint(bin('spectral'), [
      'lint',
      file,
      '--ruleset',
      join(ROOT, '.spectral.yaml'),
      '--format',
      'json',
      '--fail-severity',
      'hint',
      '--quiet',
    ])
    const findings = (JSON.parse(out) as { code: string; path: string[]; message: string }[]).map(
      (f) => `${f.code} at ${f.path.join('.')}: ${f.message}`,
    )
    assert.deepEqual(findings, [])
  })

  test('Redocly (recommended rules) finds nothing', async (t) => {
    const file = await servedDocumentFile(t)
    const out = await lint(bin('redocly'), [
      'lint',
      file,
      '--config',
      join(ROOT, 'redocly.yaml'),
      '--format',
      'json',
    ])
    const report = JSON.parse(out) as {
      totals: { errors: number; warnings: number; ignored: number }
      problems: { ruleId: string; message: string }[]
    }
    assert.deepEqual(
      report.problems.map((p) => `${p.ruleId}: ${p.message}`),
      [],
    )
    assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 })
  })
})
