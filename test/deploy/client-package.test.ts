// The client as a client developer gets it: `npm pack` of client/, installed into an empty project,
// compiled there by tsc under NodeNext and strict, and run against a real service.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { baseEnv, startService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CLIENT = join(ROOT, 'client')
const API_KEY = 'client-package-key-0123456789'

const versionIn = (dir: string): string =>
  (JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as { version: string }).version

/**
 * The test's environment without what `npm test` adds for its script (the prefix, the package,
 * the command): left in, the npm commands below would act on this repository, not the empty
 * project. The user's npm settings (registry, cache, CA file) stay.
 */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = baseEnv()
  const scriptOnly = /^npm_(package_|lifecycle_|command$|config_local_prefix$|config_call$)/i
  for (const name of Object.keys(env)) if (scriptOnly.test(name)) delete env[name]
  return { ...env, ...extra }
}

function run(command: string, args: string[], cwd: string, env = cleanEnv()): Promise<string> {
  return new Promise((resolve, reject) => {
    // Only a stop for a hung program: an install or a compile takes minutes on a loaded machine.
    execFile(command, args, { cwd, env, timeout: 5 * 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`))
      else resolve(stdout)
    })
  })
}

// A program of the consumer's own: every result is printed as JSON, bigints as "<digits>n", so
// the test sees exactly what came back and of which type.
const CONSUMER = `import {
  createPetstoreClient,
  type ErrorBody,
  type NewPet,
  type Pet,
  PetstoreError,
} from '@petstore/client'

const show = (value: unknown) =>
  JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? \`\${v}n\` : v))

const listQueries: string[] = []
const client = createPetstoreClient({
  baseUrl: process.env.PETSTORE_URL!,
  apiKey: process.env.PETSTORE_KEY!,
  fetch: (request) => {
    const url = new URL(request.url)
    if (request.method === 'GET' && url.pathname.endsWith('/pets')) {
      listQueries.push(url.searchParams.has('cursor') ? 'limit+cursor' : \`limit=\${url.searchParams.get('limit')}\`)
    }
    return fetch(request)
  },
})

// @ts-expect-error: an int64 field is a bigint; a number may already have lost digits
const rounded: NewPet = { name: 'Rounded', categoryId: 9223372036854775807 }
void rounded

const max: NewPet = { name: 'Max', categoryId: 9223372036854775807n, status: 'available' }
const header = { 'Idempotency-Key': 'consumer-max' }
const created = await client.api.POST('/pets', { body: max, params: { header } })
if (created.error) throw new PetstoreError(created.response, created.error)
const replayed = await client.api.POST('/pets', { body: max, params: { header } })
if (replayed.error) throw new PetstoreError(replayed.response, replayed.error)
const id: bigint = created.data.id
const categoryId: bigint = created.data.categoryId

const more: NewPet[] = [
  { name: 'Luna', categoryId: -9223372036854775808n, status: 'pending' },
  { name: 'Milo', categoryId: BigInt('9007199254740993'), status: 'sold' },
  { name: 'Bella', categoryId: 2n },
  { name: 'Rex', categoryId: 3n, status: 'available' },
]
for (const body of more) {
  const { error, response } = await client.api.POST('/pets', { body })
  if (error) throw new PetstoreError(response, error)
}
const all: Pet[] = []
for await (const pet of client.listAllPets({ limit: 2 })) all.push(pet)
const available: Pet[] = []
for await (const pet of client.listAllPets({ status: 'available', limit: 1 })) available.push(pet)

let missing: unknown
const got = await client.api.GET('/pets/{petId}', { params: { path: { petId: 404n } } })
try {
  if (got.error) throw new PetstoreError(got.response, got.error)
} catch (err) {
  if (!(err instanceof PetstoreError)) throw err
  const body: ErrorBody | undefined = err.body
  missing = { isError: err instanceof Error, name: err.name, status: err.status, message: err.message, body }
}

const tooBig = await client.api.POST('/pets', { body: { name: 'Huge', categoryId: 2n ** 63n } })

console.log(
  show({
    created: { status: created.response.status, pet: created.data, types: [typeof id, typeof categoryId] },
    replayed: {
      status: replayed.response.status,
      replayed: replayed.response.headers.get('idempotent-replayed'),
      pet: replayed.data,
    },
    all: all.map((pet) => \`\${pet.id} \${pet.name} \${pet.categoryId} \${pet.status ?? '-'}\`),
    available: available.map((pet) => pet.id),
    listQueries,
    missing,
    tooBig: { status: tooBig.response.status, error: tooBig.error },
  }),
)
`

storeIndependent(() => {
  describe('the client package', () => {
    let dir = ''
    let packed: { filename: string; size: number; files: { path: string }[] }
    let project = ''

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'petstore-client-package-'))
      // A file the build does not make: prepack rebuilds dist/, so it must not reach the tarball.
      mkdirSync(join(CLIENT, 'dist'), { recursive: true })
      writeFileSync(join(CLIENT, 'dist', 'stale.js'), 'export {}\n')
      const out = await run('npm', ['pack', '--json', '--pack-destination', dir], CLIENT)
      packed = (JSON.parse(out) as (typeof packed)[])[0]!

      project = join(dir, 'consumer')
      mkdirSync(project)
      writeFileSync(
        join(project, 'package.json'),
        `${JSON.stringify({ name: 'consumer', private: true, type: 'module' })}\n`,
      )
      // The same TypeScript and Node types as this repository, most likely already in npm's cache.
      await run(
        'npm',
        [
          'install',
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          join(dir, packed.filename),
          `typescript@${versionIn('node_modules/typescript')}`,
          `@types/node@${versionIn('node_modules/@types/node')}`,
        ],
        project,
      )
    })

    after(() => {
      if (dir !== '') rmSync(dir, { recursive: true, force: true })
    })

    test('the tarball holds a fresh build, the README, the licence and package.json, nothing else', () => {
      assert.equal(packed.filename, 'petstore-client-1.0.0.tgz')
      assert.deepEqual(packed.files.map((f) => f.path).sort(), [
        'LICENSE',
        'README.md',
        'dist/index.d.ts',
        'dist/index.js',
        'dist/schema.d.ts',
        'dist/schema.js',
        'package.json',
      ])
    })

    test('it installs as an ESM package of the service version, with its own dependencies', () => {
      const installed = JSON.parse(
        readFileSync(join(project, 'node_modules', '@petstore', 'client', 'package.json'), 'utf8'),
      ) as Record<string, unknown>
      assert.deepEqual(
        {
          name: installed.name,
          version: installed.version,
          type: installed.type,
          license: installed.license,
          exports: installed.exports,
          dependencies: installed.dependencies,
        },
        {
          name: '@petstore/client',
          version: versionIn('.'),
          type: 'module',
          license: 'MIT',
          exports: {
            '.': { types: './dist/index.d.ts', import: './dist/index.js' },
            './package.json': './package.json',
          },
          dependencies: { 'lossless-json': '^4.3.3', 'openapi-fetch': '^0.17.0' },
        },
      )
    })

    test('a consumer compiles under NodeNext and strict, and talks to a running service', async (t) => {
      writeFileSync(join(project, 'consumer.ts'), CONSUMER)
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            types: ['node'],
            outDir: 'out',
            noEmitOnError: true,
          },
          files: ['consumer.ts'],
        }),
      )
      // Without skipLibCheck, so the package's declarations are type-checked as well.
      await run(join(project, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], project)

      const service = await startService(t, {
        env: { PETSTORE_API_KEYS: API_KEY, PETSTORE_LOG_LEVEL: 'warn' },
      })
      const env = cleanEnv({ PETSTORE_URL: `${service.origin}/v1`, PETSTORE_KEY: API_KEY })
      const stdout = await run(process.execPath, [join('out', 'consumer.js')], project, env)

      const max = { id: '1n', name: 'Max', categoryId: '9223372036854775807n', status: 'available' }
      assert.deepEqual(JSON.parse(stdout), {
        created: { status: 201, pet: max, types: ['bigint', 'bigint'] },
        replayed: { status: 201, replayed: 'true', pet: max },
        all: [
          '1 Max 9223372036854775807 available',
          '2 Luna -9223372036854775808 pending',
          '3 Milo 9007199254740993 sold',
          '4 Bella 2 -',
          '5 Rex 3 available',
        ],
        available: ['1n', '5n'],
        // Five pets two a page, then two available pets one a page: 3 + 2 requests.
        listQueries: ['limit=2', 'limit+cursor', 'limit+cursor', 'limit=1', 'limit+cursor'],
        missing: {
          isError: true,
          name: 'PetstoreError',
          status: 404,
          message: '404 not_found: no pet with id 404',
          body: { code: 'not_found', message: 'no pet with id 404', status: 404 },
        },
        tooBig: {
          status: 400,
          error: {
            code: 'invalid_request',
            message: "field 'categoryId' must be a 64-bit integer",
            status: 400,
          },
        },
      })
    })
  })
})
