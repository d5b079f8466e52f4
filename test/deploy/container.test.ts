// The Containerfile and compose.yaml, run for real with podman: the image is built from the
// repository's .containerignore'd context, serves from a volume that outlives its container, drains
// on SIGTERM and exits 0; compose.yaml's two instances on PostgreSQL and Redis answer through
// nginx. The official base images are pulled; where no registry answers, test stand-ins made by
// scripts/base-image.sh take their names (docs/containers.md). A machine where podman cannot run
// fails this test; it is never skipped.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { freePort } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '')
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string
  license: string
}
const CONTAINERFILE = readFileSync(join(ROOT, 'Containerfile'), 'utf8')
const COMPOSE = readFileSync(join(ROOT, 'compose.yaml'), 'utf8')
const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version: string }>
}
/** The base image that the Containerfile names, and the official images that compose.yaml runs. */
const NODE_IMAGE = /^ARG NODE_IMAGE=(\S+)$/m.exec(CONTAINERFILE)?.[1] ?? 'no ARG NODE_IMAGE'
const COMPOSE_IMAGES = [...COMPOSE.matchAll(/^ {4}image: (docker\.io\/library\/\S+)$/gm)].map(
  (m) => m[1]!,
)
/** Podman's settings for the test (runc, no default ulimits), so /etc needs no hand edits. */
const ENV: NodeJS.ProcessEnv = {
  ...process.env,
  CONTAINERS_CONF: join(ROOT, 'test/support/containers.conf'),
}
/** This test's own tag: an image built by hand under another name is left alone. */
const IMAGE = 'localhost/petstore:test'
/** Node's flags for the service: the `petstore` bin's `#!` line (src/cli/launch.ts). */
const NODE_FLAGS = readFileSync(join(ROOT, 'src/cli/launch.ts'), 'utf8')
  .split('\n', 1)[0]!
  .replace(/^#!\/usr\/bin\/env -S node /, '')
  .split(' ')
const SUFFIX = randomBytes(4).toString('hex')
/** The digest of what this test built the image from, kept on the image. */
const CONTEXT_LABEL = 'petstore.test.context-sha256'
const CONTEXT_LABEL_FORMAT = `{{ index .Labels "${CONTEXT_LABEL}" }}`
const MINUTE = 60_000

// ---------------------------------------------------------------- commands

interface Result {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a program to its end, killed after `timeoutMs` (a hung podman must not hang the suite). */
function run(
  argv: string[],
  opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: opts.cwd ?? ROOT,
      env: opts.env ?? ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    // Not spawn's own `timeout`: its timer outlives a program that could not be started.
    let timedOut = false
    const timer = setTimeout(
      () => {
        timedOut = true
        child.kill('SIGKILL')
      },
      opts.timeoutMs ?? 2 * MINUTE,
    )
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code: timedOut ? null : code, stdout, stderr })
    })
  })
}

/** stdout of a command that must succeed; its output is in the failure message otherwise. */
async function ok(argv: string[], opts: Parameters<typeof run>[1] = {}): Promise<string> {
  const result = await run(argv, opts)
  assert.equal(
    result.code,
    0,
    `${argv.join(' ')} failed (${result.code === null ? 'timed out' : `status ${result.code}`}):\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`,
  )
  return result.stdout
}

const podman = (args: string[], opts: Parameters<typeof run>[1] = {}) =>
  ok(['podman', ...args], opts)

/**
 * The image's HEALTHCHECK run once: its exit code, 0 healthy or 1 not. Podman's own failures
 * (status 125, e.g. its database locked by a podman command of another test) are not the check's
 * answer, so the check is run again, and a lasting one fails with podman's message.
 */
async function runHealthcheck(container: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const r = await run(['podman', 'healthcheck', 'run', container])
    if (r.code === 0 || r.code === 1) return r.code
    if (r.code !== 125 || attempt === 5) {
      assert.fail(`podman healthcheck run ${container}: status ${r.code}\n${r.stdout}\n${r.stderr}`)
    }
  }
}

/** The host port that podman published for a container's port. */
async function publishedPort(container: string, port: number): Promise<number> {
  const out = await podman(['port', container, `${port}/tcp`])
  const m = /^127\.0\.0\.1:(\d+)$/m.exec(out)
  assert.ok(m, `no port published for ${container}:${port}: ${out}`)
  return Number(m[1])
}

/** Polls `probe` until it returns a value, failing with `describe()` after `timeoutMs`. */
async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  describe: () => Promise<string> = async () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe().catch(() => undefined)
    if (value !== undefined) return value
    if (Date.now() > deadline) assert.fail(`${what} within ${timeoutMs} ms\n${await describe()}`)
    await sleep(200)
  }
}

async function logs(container: string): Promise<string> {
  const r = await run(['podman', 'logs', container])
  return `logs of ${container}:\n${r.stdout}${r.stderr}`
}

/** Why the run cannot start: podman missing, or unable to run containers on this host. */
async function assertPodmanRuns(): Promise<void> {
  const info = await run(['podman', 'info', '--format', '{{.Host.OCIRuntime.Name}}']).catch(
    (err: NodeJS.ErrnoException) => {
      assert.fail(
        `podman is not installed (${err.code}), and this test needs it: run \`npm run system-deps\``,
      )
    },
  )
  assert.equal(
    info.code,
    0,
    `podman cannot run containers here (it needs root, or user namespaces with subuid/subgid): ${info.stderr}`,
  )
  assert.equal(info.stdout, 'runc\n', 'test/support/containers.conf selects runc')
}

// ---------------------------------------------------------------- images

/**
 * The label of the stand-ins that scripts/base-image.sh makes (its value: a digest of the recipe),
 * and the one that stand-ins made before it was named so carry.
 */
const STAND_IN_LABELS = ['org.petstore.stand-in', 'petstore.stand-in']

/** An image in local storage: its ID and whether it is a stand-in; null when there is none. */
async function localImage(ref: string): Promise<{ id: string; standIn: boolean } | null> {
  const r = await run(['podman', 'image', 'inspect', '--format', '{{.Id}} {{json .Labels}}', ref])
  if (r.code !== 0) return null
  const [id = '', labels = 'null'] = r.stdout.trim().split(/ (.*)/)
  const present = Object.keys((JSON.parse(labels) as Record<string, string> | null) ?? {})
  return { id, standIn: STAND_IN_LABELS.some((label) => present.includes(label)) }
}

/**
 * The official images, each pulled unless a real one is here already. Only where the pull fails
 * (no registry answers) does a stand-in of scripts/base-image.sh take the name: made once, then
 * reused while its recipe is the same. A stand-in that a pulled image replaces is removed.
 */
async function baseImages(refs: string[]): Promise<void> {
  for (const ref of refs) {
    const before = await localImage(ref)
    if (before && !before.standIn) continue
    const pulled = await run(['podman', 'pull', '--quiet', ref], { timeoutMs: 5 * MINUTE })
    if (pulled.code === 0) {
      if (before) await run(['podman', 'rmi', before.id])
      continue
    }
    // node, postgres, redis or nginx: the stand-in's recipe in test/support/stand-in-images/.
    const name = /^docker\.io\/library\/([a-z]+):/.exec(ref)?.[1] ?? ref
    await ok(['sh', join(ROOT, 'scripts/base-image.sh'), name], { timeoutMs: 15 * MINUTE })
    assert.equal(
      (await localImage(ref))?.standIn,
      true,
      `scripts/base-image.sh ${name} made ${ref}`,
    )
  }
}

/** The host's CA bundle, given to npm in the build (a TLS-inspecting proxy's, say). */
async function npmCaBundle(): Promise<string | null> {
  const configured = (await ok(['npm', 'config', 'get', 'cafile'], { env: process.env })).trim()
  if (configured !== '' && configured !== 'null' && existsSync(configured)) return configured
  return process.env.NODE_EXTRA_CA_CERTS ?? null
}

/** Every file of the build context (.containerignore lets in only the paths it names with `!`). */
function contextFiles(): string[] {
  const named = readFileSync(join(ROOT, '.containerignore'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('!'))
    .map((line) => line.slice(1).replace(/\/$/, ''))
  const files = named.flatMap((path) =>
    statSync(join(ROOT, path)).isDirectory()
      ? readdirSync(join(ROOT, path), { recursive: true, encoding: 'utf8' })
          .map((name) => join(path, name))
          .filter((file) => statSync(join(ROOT, file)).isFile())
      : [path],
  )
  return ['Containerfile', '.containerignore', ...files].sort()
}

/**
 * Builds the image unless the one in storage was built from this very context, base image and
 * version: podman's own layer cache would find every layer, but only after hashing them all.
 */
async function buildImage(): Promise<'built' | 'unchanged'> {
  const base = (await podman(['image', 'inspect', '--format', '{{.Id}}', NODE_IMAGE])).trim()
  const hash = createHash('sha256').update(`${base}\0${PACKAGE.version}\0`)
  for (const file of contextFiles()) hash.update(`${file}\0`).update(readFileSync(join(ROOT, file)))
  const digest = hash.digest('hex')
  const existing = await run([
    'podman',
    'image',
    'inspect',
    '--format',
    `{{.Id}} ${CONTEXT_LABEL_FORMAT}`,
    IMAGE,
  ])
  const [existingId, existingDigest] = existing.stdout.trim().split(' ')
  if (existing.code === 0 && existingDigest === digest) return 'unchanged'

  const ca = await npmCaBundle()
  await podman(
    [
      'build',
      // Docker's format keeps HEALTHCHECK; OCI's has no field for it. No intermediate image of
      // each step is kept: an unchanged context is not built again (above).
      ...['--format', 'docker', '--layers=false'],
      ...['--build-arg', `VERSION=${PACKAGE.version}`],
      ...(ca ? ['--secret', `id=npm_ca,src=${ca}`] : []),
      ...['--label', `${CONTEXT_LABEL}=${digest}`],
      ...['-t', IMAGE, '-f', join(ROOT, 'Containerfile'), ROOT],
    ],
    // A stop for a hung build only: on a loaded 2-core machine a build takes tens of minutes.
    { timeoutMs: 45 * MINUTE },
  )
  // The image this build replaced, now without a name.
  if (existing.code === 0 && existingId) await run(['podman', 'rmi', existingId])
  return 'built'
}

interface Reply {
  status: number
  body: string
  location: string | null
}

/** A GET, or a POST of `body` (JSON text, so that int64 values go as written). */
async function call(origin: string, path: string, key: string, body?: string): Promise<Reply> {
  const res = await fetch(`${origin}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body,
    signal: AbortSignal.timeout(30_000),
  })
  return { status: res.status, body: await res.text(), location: res.headers.get('location') }
}

/** Resolves once GET /readyz at `origin` answers 200. */
function ready(origin: string, timeoutMs: number, explain: () => Promise<string>) {
  return until(
    `${origin}/readyz did not answer 200`,
    timeoutMs,
    async () => {
      const res = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(5000) })
      return res.status === 200 ? true : undefined
    },
    explain,
  )
}

/** The redoc bundle as the /docs page serves it: the Redocly logo left blank (test/docs-page). */
function servedRedocBundle(): Buffer {
  const path = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js')
  return Buffer.from(
    readFileSync(path, 'utf8').replace(
      'https://cdn.redoc.ly/redoc/logo-mini.svg',
      "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E",
    ),
  )
}

/** Each installed package of the image's /app/node_modules, as `name@version`. */
const LIST_PACKAGES = `
const fs = require('node:fs')
const found = new Set()
const visit = (dir) => {
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith('.')) continue
    if (name.startsWith('@')) for (const sub of fs.readdirSync(dir + '/' + name)) add(dir + '/' + name + '/' + sub)
    else add(dir + '/' + name)
  }
}
const add = (path) => {
  if (!fs.existsSync(path + '/package.json')) return
  const { name, version } = JSON.parse(fs.readFileSync(path + '/package.json', 'utf8'))
  found.add(name + '@' + version)
  if (fs.existsSync(path + '/node_modules')) visit(path + '/node_modules')
}
visit('/app/node_modules')
console.log(JSON.stringify([...found].sort()))
`

interface CycloneDxComponent {
  'bom-ref': string
  type: string
  name: string
  version: string
  purl: string
  properties: { name: string; value: string }[]
}

/**
 * /app/sbom.cdx.json is a CycloneDX SBOM of the service: one component for each package in
 * /app/node_modules, at the version installed, and redoc as the one file of it that is shipped.
 */
async function assertSbom(): Promise<void> {
  const sbom = JSON.parse(
    await podman(['run', '--rm', '--entrypoint', 'cat', IMAGE, '/app/sbom.cdx.json']),
  ) as {
    bomFormat: string
    specVersion: string
    metadata: { component: { name: string; version: string; type: string } }
    components: CycloneDxComponent[]
    dependencies: { ref: string; dependsOn: string[] }[]
  }
  assert.equal(sbom.bomFormat, 'CycloneDX')
  assert.match(sbom.specVersion, /^1\.\d+$/)
  const { name, version, type } = sbom.metadata.component
  assert.deepEqual(
    { name, version, type },
    { name: 'petstore', version: PACKAGE.version, type: 'application' },
  )

  const installed = JSON.parse(
    await podman(['run', '--rm', '--entrypoint', 'node', IMAGE, '-e', LIST_PACKAGES]),
  ) as string[]
  const fastify = `fastify@${LOCK.packages['node_modules/fastify']!.version}`
  assert.ok(installed.includes(fastify), `the image holds ${fastify}`)
  const redoc = `redoc@${LOCK.packages['node_modules/redoc']!.version}`
  assert.ok(!installed.some((p) => p.startsWith('redoc@')), 'redoc is not in node_modules')
  assert.deepEqual(
    sbom.components.map((c) => c['bom-ref']).sort(),
    [...installed, redoc].sort(),
    'the SBOM lists what node_modules holds, and redoc',
  )
  const listed = (ref: string) => sbom.components.find((c) => c['bom-ref'] === ref)
  assert.deepEqual(
    { name: listed(fastify)?.name, purl: listed(fastify)?.purl },
    { name: 'fastify', purl: `pkg:npm/${fastify}` },
  )
  assert.deepEqual(listed(redoc)?.properties, [
    { name: 'petstore:file', value: '/app/dist/redoc.standalone.js' },
  ])
  const root = sbom.dependencies.find((d) => d.ref === `petstore@${PACKAGE.version}`)
  assert.ok(root?.dependsOn.includes(fastify) && root.dependsOn.includes(redoc))
}

// ---------------------------------------------------------------- files that must agree

storeIndependent(() => {
  test('the image runs node with the bin’s flags, the version compose.yaml builds is package.json’s, and compose’s nginx proxies as deploy/nginx.conf', () => {
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(CONTAINERFILE)
    assert.ok(entrypoint, 'Containerfile has an exec-form ENTRYPOINT')
    assert.deepEqual(JSON.parse(entrypoint[1]!), ['node', ...NODE_FLAGS, '/app/dist/main.js'])
    assert.match(CONTAINERFILE, /^CMD \["serve"\]$/m)
    assert.match(CONTAINERFILE, /^FROM \$\{NODE_IMAGE\}$/m)
    // Node.js 26, the Active LTS line, on Debian 13 as the official images for 26 are.
    assert.equal(NODE_IMAGE, 'docker.io/library/node:26-trixie-slim')
    assert.deepEqual(COMPOSE_IMAGES, [
      'docker.io/library/postgres:15-bookworm',
      'docker.io/library/redis:7.0-bookworm',
      'docker.io/library/nginx:1.22',
    ])

    assert.deepEqual(
      [...COMPOSE.matchAll(/^ {6}VERSION: "(.*)"$/gm)].map((m) => m[1]),
      [PACKAGE.version],
    )

    // The one block that decides how requests reach the instances, cut at its closing brace.
    const location = (file: string) => {
      const text = readFileSync(join(ROOT, 'deploy', file), 'utf8')
      const m = /^( +)location \/ \{\n[\s\S]*?\n\1\}$/m.exec(text)
      assert.ok(m, `deploy/${file} has a location / block`)
      return m[0]
    }
    assert.equal(location('compose-nginx.conf'), location('nginx.conf'))
  })

  // ---------------------------------------------------------------- with podman

  describe('the container image and compose.yaml, run with podman', { concurrency: true }, () => {
    let image: Promise<'built' | 'unchanged'>
    let composeImages: Promise<unknown>

    // No timeout of its own: `podman info` is bounded by run(), and the rest only starts work.
    before(async () => {
      await assertPodmanRuns()
      const base = baseImages([NODE_IMAGE])
      image = base.then(buildImage)
      composeImages = base.then(() => baseImages(COMPOSE_IMAGES))
      // Both tests wait for their part; a failure is reported by the test that needs it.
      image.catch(() => {})
      composeImages.catch(() => {})
    })

    test('the image serves from its volume as a non-root user, drains on SIGTERM and exits 0, and a new container reads what the first one wrote', {
      timeout: 60 * MINUTE,
    }, async (t) => {
      const started = Date.now()
      const built = await image
      t.diagnostic(
        `base images and build (${built}): ${((Date.now() - started) / 1000).toFixed(1)} s`,
      )

      const [inspected] = JSON.parse(await podman(['image', 'inspect', IMAGE])) as {
        Size: number
        // Podman shows the Docker-format image's health check beside its Config.
        Healthcheck?: {
          Test: string[]
          Interval: number
          Timeout: number
          StartPeriod: number
          Retries: number
        }
        Config: {
          User: string
          Labels: Record<string, string>
          ExposedPorts: Record<string, unknown>
          Volumes: Record<string, unknown>
          StopSignal: string
        }
      }[]
      t.diagnostic(
        `image size: ${(inspected!.Size / 1e6).toFixed(1)} MB (${inspected!.Size} bytes)`,
      )
      const config = inspected!.Config
      assert.equal(config.User, '1000:1000')
      assert.equal(config.Labels['org.opencontainers.image.version'], PACKAGE.version)
      assert.equal(config.Labels['org.opencontainers.image.title'], 'petstore')
      assert.equal(config.Labels['org.opencontainers.image.licenses'], PACKAGE.license)
      assert.equal(config.Labels['org.petstore.sbom'], '/app/sbom.cdx.json')
      assert.deepEqual(Object.keys(config.ExposedPorts).sort(), ['8080/tcp', '9464/tcp'])
      assert.deepEqual(Object.keys(config.Volumes), ['/data'])
      assert.equal(config.StopSignal, 'SIGTERM')
      const healthcheck = /^ {2}CMD (\[.*\])$/m.exec(CONTAINERFILE)
      assert.ok(healthcheck, 'Containerfile has an exec-form HEALTHCHECK')
      assert.deepEqual(inspected!.Healthcheck, {
        Test: ['CMD', ...JSON.parse(healthcheck[1]!)],
        Interval: 10e9,
        Timeout: 3e9,
        StartPeriod: 15e9,
        Retries: 3,
      })

      // The image is the `petstore` command; only the build's output and its SBOM are in /app.
      assert.equal(await podman(['run', '--rm', IMAGE, '--version']), `${PACKAGE.version}\n`)
      assert.equal(await podman(['run', '--rm', '--entrypoint', 'id', IMAGE, '-u']), '1000\n')
      assert.equal(
        await podman(['run', '--rm', '--entrypoint', 'ls', IMAGE, '-A', '/app']),
        'dist\nnode_modules\npackage.json\nsbom.cdx.json\n',
      )
      await assertSbom()

      const volume = `petstore-test-${SUFFIX}`
      const names = [`petstore-test-${SUFFIX}-a`, `petstore-test-${SUFFIX}-b`]
      t.after(async () => {
        await run(['podman', 'rm', '--force', '--volumes', '--time', '0', ...names])
        await run(['podman', 'volume', 'rm', '--force', volume])
      })
      await podman(['volume', 'create', volume])
      const start = async (name: string) => {
        await podman([
          ...['run', '--detach', '--name', name, '--volume', `${volume}:/data`],
          // A free port of the host's, chosen by podman.
          ...['--publish', '127.0.0.1::8080'],
          ...['--env', 'PETSTORE_DRAIN_DELAY=3s', '--env', 'PETSTORE_SHUTDOWN_TIMEOUT=5s'],
          IMAGE,
        ])
        const origin = `http://127.0.0.1:${await publishedPort(name, 8080)}`
        await ready(origin, 2 * MINUTE, () => logs(name))
        return origin
      }

      const first = await start(names[0]!)
      // stdout is no terminal, so the first start put the key on the volume, beside the database.
      assert.match(
        await podman(['logs', names[0]!]),
        /^petstore: no API key existed, so one was created \(id [0-9a-f]+\); the bootstrap API key was written to \/data\/bootstrap-key, readable only by this user$/m,
      )
      const key = (await podman(['exec', names[0]!, 'cat', '/data/bootstrap-key'])).trim()
      assert.match(key, /^pet_[0-9a-f]+_\S+$/)
      // node itself is PID 1: the signal reaches the service with no shell or npm in between.
      assert.equal(
        await podman(['exec', names[0]!, 'cat', '/proc/1/cmdline']),
        `${['node', ...NODE_FLAGS, '/app/dist/main.js', 'serve'].join('\0')}\0`,
      )
      assert.equal(await runHealthcheck(names[0]!), 0, 'the HEALTHCHECK passes once ready')
      // Node.js 26 loads the Node-API driver: better-sqlite3 12, built on node::ObjectWrap, aborts
      // the process when a statement is collected on 24.19 and later (src/storage/sqlite/driver.ts).
      const maps = await podman(['exec', names[0]!, 'cat', '/proc/1/maps'])
      assert.deepEqual(
        [...new Set(maps.match(/\/app\/node_modules\/\S+\.node$/gm))],
        ['/app/node_modules/better-sqlite3-napi/prebuilds/linux-x64.node'],
      )

      // The /docs page's scripts: the redoc package's bundle, shipped in dist/ without the package,
      // and the page's own.
      const script = await fetch(`${first}/docs/redoc.standalone.js`, {
        headers: { 'accept-encoding': 'identity' },
      })
      assert.equal(script.status, 200)
      assert.ok(
        Buffer.from(await script.arrayBuffer()).equals(servedRedocBundle()),
        'the image serves the redoc package’s bundle',
      )
      const pageScript = await fetch(`${first}/docs/page.js`, {
        headers: { 'accept-encoding': 'identity' },
      })
      assert.equal(pageScript.status, 200)
      assert.equal(
        await pageScript.text(),
        readFileSync(new URL('../../src/http/docs-page-script.js', import.meta.url), 'utf8'),
        'the image serves the page’s own script',
      )

      const created = await call(
        first,
        '/v1/pets',
        key,
        '{"name":"Rex","categoryId":9223372036854775807,"status":"available"}',
      )
      const petJson = '{"id":1,"name":"Rex","categoryId":9223372036854775807,"status":"available"}'
      assert.deepEqual(created, { status: 201, body: petJson, location: '/v1/pets/1' })

      const stopAsked = Date.now()
      await podman(['kill', '--signal', 'TERM', names[0]!])
      // Draining: readiness is 503, so the HEALTHCHECK fails while requests are still served.
      assert.equal(await runHealthcheck(names[0]!), 1)
      const exitCode = await podman(['wait', names[0]!], { timeoutMs: MINUTE })
      const stopMs = Date.now() - stopAsked
      t.diagnostic(`SIGTERM to exit: ${stopMs} ms`)
      assert.equal(exitCode, '0\n', await logs(names[0]!))
      // At least the drain delay, and within it plus the shutdown timeout (3 s + 5 s).
      assert.ok(stopMs >= 3000 && stopMs < 8000, `exited ${stopMs} ms after SIGTERM`)
      assert.match(
        await podman(['logs', names[0]!]),
        /"signal":"SIGTERM","drainDelayMs":3000,"msg":"draining before exit"/,
      )

      const second = await start(names[1]!)
      assert.deepEqual(await call(second, '/v1/pets', key), {
        status: 200,
        body: `[${petJson}]`,
        location: null,
      })
      await podman(['stop', '--time', '20', names[1]!], { timeoutMs: MINUTE })
      assert.equal(await podman(['inspect', '--format', '{{.State.ExitCode}}', names[1]!]), '0\n')
    })

    test('compose.yaml: two instances on PostgreSQL and Redis behind nginx take a create and a list, and come down', {
      timeout: 60 * MINUTE,
    }, async (t) => {
      const started = Date.now()
      await Promise.all([image, composeImages])
      t.diagnostic(`images for compose: ${((Date.now() - started) / 1000).toFixed(1)} s`)

      const project = `petstoretest${SUFFIX}`
      const port = await freePort()
      const env: NodeJS.ProcessEnv = {
        ...ENV,
        PETSTORE_IMAGE: IMAGE,
        PETSTORE_HTTP_PORT: String(port),
        POSTGRES_PASSWORD: randomBytes(12).toString('hex'),
      }
      const compose = (args: string[], timeoutMs = 5 * MINUTE) =>
        ok(['podman-compose', '--project-name', project, '--file', 'compose.yaml', ...args], {
          env,
          timeoutMs,
        })
      const label = `label=io.podman.compose.project=${project}`
      const containers = async () =>
        (await podman(['ps', '--all', '--filter', label, '--format', '{{.Names}}']))
          .split('\n')
          .filter((n) => n !== '')
      const containerOf = async (service: string) => {
        const out = await podman([
          ...['ps', '--all', '--filter', label],
          ...['--filter', `label=com.docker.compose.service=${service}`, '--format', '{{.Names}}'],
        ])
        assert.equal(out.split('\n').filter((n) => n !== '').length, 1, `one ${service}: ${out}`)
        return out.trim()
      }
      // Volumes the containers made without a name (an image's VOLUME), which `down -v` leaves.
      const anonymousVolumes = new Set<string>()
      const noteVolumes = async () => {
        for (const name of await containers()) {
          const mounts = JSON.parse(
            await podman(['inspect', '--format', '{{json .Mounts}}', name]),
          ) as { Type: string; Name?: string }[]
          for (const m of mounts) if (m.Type === 'volume' && m.Name) anonymousVolumes.add(m.Name)
        }
      }
      let down = false
      t.after(async () => {
        await noteVolumes().catch(() => {})
        if (!down) {
          await run(
            ['podman-compose', '--project-name', project, '--file', 'compose.yaml', 'down', '-v'],
            { env, timeoutMs: 5 * MINUTE },
          )
        }
        const left = await containers().catch(() => [])
        if (left.length > 0) await run(['podman', 'rm', '--force', '--volumes', ...left])
        const labelled = await run(['podman', 'volume', 'ls', '--quiet', '--filter', label])
        const volumes = [...anonymousVolumes, ...labelled.stdout.split('\n')].filter(
          (v) => v !== '',
        )
        if (volumes.length > 0) await run(['podman', 'volume', 'rm', '--force', ...volumes])
        await run(['podman', 'network', 'rm', '--force', `${project}_default`])
      })

      await compose(['up', '--detach'])
      await noteVolumes()
      const origin = `http://127.0.0.1:${port}`
      const instances = await Promise.all(['petstore-1', 'petstore-2'].map(containerOf))
      const explain = async () =>
        (await Promise.all([...instances, await containerOf('nginx')].map(logs))).join('\n')
      await ready(origin, 3 * MINUTE, explain)
      for (const name of instances) {
        await until(
          `${name} did not listen`,
          2 * MINUTE,
          async () =>
            /^petstore listening on http:\/\/0\.0\.0\.0:8080 \(store: postgres\)$/m.test(
              (await run(['podman', 'logs', name])).stdout,
            ) || undefined,
          explain,
        )
      }
      // The first instance on the empty database wrote the bootstrap key to the shared volume.
      const key = (await podman(['exec', instances[1]!, 'cat', '/data/bootstrap-key'])).trim()
      assert.match(key, /^pet_[0-9a-f]+_\S+$/)

      const created = await call(origin, '/v1/pets', key, '{"name":"Rex","categoryId":1}')
      assert.deepEqual(created, {
        status: 201,
        body: '{"id":1,"name":"Rex","categoryId":1}',
        location: '/v1/pets/1',
      })
      // Both instances serve the one catalogue through nginx. nginx takes turns, but leaves out for
      // 10 s an instance that refused a connection while it was still starting: ask until each
      // has answered a list.
      const answeredList = async (name: string) =>
        /"operation":"listPets","method":"GET","url":"\/v1\/pets","status":200/.test(
          (await run(['podman', 'logs', name])).stdout,
        )
      const deadline = Date.now() + MINUTE
      for (;;) {
        assert.deepEqual(await call(origin, '/v1/pets', key), {
          status: 200,
          body: '[{"id":1,"name":"Rex","categoryId":1}]',
          location: null,
        })
        if ((await Promise.all(instances.map(answeredList))).every(Boolean)) break
        assert.ok(Date.now() < deadline, `an instance answered no list:\n${await explain()}`)
        await sleep(200)
      }

      await noteVolumes()
      await compose(['down', '--volumes', '--timeout', '20'])
      down = true
      assert.deepEqual(await containers(), [])
    })
  })
})
