// The deployment files as committed, proved on a machine without systemd: the units are parsed,
// checked by systemd-analyze, and their ExecStart is run with the environment systemd would give
// it; nginx runs deploy/nginx.conf in front of two instances with only its ports and paths
// replaced. The tools are required: a missing one fails the test, it is never skipped.
import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import type { IncomingHttpHeaders } from 'node:http'
import http2 from 'node:http2'
import https from 'node:https'
import nodeModule from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { NODE_FLAGS as BENCH_NODE_FLAGS } from '../../bench/service.js'
import { duration, loadConfig } from '../../src/config.js'
import { LISTENING_BANNER, METRICS_BANNER } from '../../src/server.js'
import { freePort, type StartedService, startService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '')
const DEPLOY = join(ROOT, 'deploy')
const MAIN = join(ROOT, 'dist/main.js')
/** Node's flags for the service: the `petstore` bin's `#!` line (src/cli/launch.ts) is their source. */
const NODE_FLAGS = readFileSync(join(ROOT, 'src/cli/launch.ts'), 'utf8')
  .split('\n', 1)[0]!
  .replace(/^#!\/usr\/bin\/env -S node /, '')
  .split(' ')
const API_KEY = 'deploy-test-key-0123456789'
const PUBLIC_HOST = 'petstore.example.com'
const LISTENING = new RegExp(
  `${LISTENING_BANNER} http://127\\.0\\.0\\.1:(\\d+) \\(store: sqlite\\)\n`,
)
/** The environment systemd gives every service before the unit's own settings. */
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin'
const SERVICE_413 = {
  code: 'payload_too_large',
  message: 'request body is larger than 65536 bytes',
  status: 413,
}

// ---------------------------------------------------------------- processes and tools

interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

interface Proc {
  child: ChildProcess
  output(): string
  /** The first match of `pattern` in the output so far or to come; rejects if the process ends first. */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>
  exited: Promise<Exit>
}

/** Where a required program is, or a failed assertion saying how to install it. */
function tool(name: string): string {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin', '/sbin', '/bin']
  for (const dir of dirs.filter((d) => d !== '')) {
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {
      // not in this directory
    }
  }
  assert.fail(`${name} is not installed, and this test needs it: run \`npm run system-deps\``)
}

const cleanups = new WeakMap<TestContext, (() => unknown)[]>()

/** Runs `fn` after the test, before what was deferred earlier (processes stop before their dir goes). */
function defer(t: TestContext, fn: () => unknown): void {
  let stack = cleanups.get(t)
  if (!stack) {
    const fns: (() => unknown)[] = []
    stack = fns
    cleanups.set(t, fns)
    t.after(async () => {
      for (const f of fns.reverse()) await f()
    })
  }
  stack.push(fn)
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-deploy-'))
  // nginx's workers run as www-data when the test runs as root; they must reach the temp paths.
  chmodSync(dir, 0o755)
  defer(t, () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * Starts a program whose stdout and stderr are collected together. After the test it gets
 * `stopSignal` (nginx's master must stop its workers itself) and is awaited.
 */
function launch(
  t: TestContext,
  argv: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; stopSignal?: NodeJS.Signals },
): Proc {
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  let ended = false
  const waiters: {
    pattern: RegExp
    resolve: (m: RegExpExecArray) => void
    reject: (e: Error) => void
  }[] = []
  const settle = () => {
    for (const w of [...waiters]) {
      const m = w.pattern.exec(output)
      if (m) w.resolve(m)
      else if (ended) w.reject(new Error(`ended before ${w.pattern}:\n${output}`))
      else continue
      waiters.splice(waiters.indexOf(w), 1)
    }
  }
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      settle()
    })
  }
  // 'close' comes after both streams end, so all output is in by then.
  const exited = new Promise<Exit>((resolve) =>
    child.once('close', (code, signal) => {
      ended = true
      settle()
      resolve({ code, signal })
    }),
  )
  defer(t, async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(opts.stopSignal ?? 'SIGKILL')
    }
    await exited
  })
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      waiters.push({ pattern, resolve, reject })
      settle()
    })
  return { child, output: () => output, waitFor, exited }
}

// ---------------------------------------------------------------- systemd units

type Unit = Map<string, [string, string][]>

/** Sections of `key=value` lines, in order; `#`/`;` comments and `\` continuations as systemd. */
function parseUnit(text: string): Unit {
  const unit: Unit = new Map()
  let section: [string, string][] | undefined
  for (const raw of text.replace(/\\\n/g, ' ').split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const header = /^\[([A-Za-z]+)\]$/.exec(line)
    if (header) {
      assert.equal(unit.has(header[1]!), false, `section [${header[1]}] appears twice`)
      section = []
      unit.set(header[1]!, section)
      continue
    }
    const eq = line.indexOf('=')
    assert.ok(section && eq > 0, `not a unit file line: ${line}`)
    section.push([line.slice(0, eq).trim(), line.slice(eq + 1).trim()])
  }
  return unit
}

function values(unit: Unit, section: string, key: string): string[] {
  return (unit.get(section) ?? []).filter(([k]) => k === key).map(([, v]) => v)
}

function value(unit: Unit, section: string, key: string): string {
  const all = values(unit, section, key)
  assert.equal(all.length, 1, `[${section}] ${key}= must be set once, found ${all.length}`)
  return all[0]!
}

/** The unit specifiers the units use; any other one fails, so this emulation never guesses. */
function expandSpecifiers(text: string, instance: string): string {
  return text.replace(/%(.)/g, (_, c: string) => {
    if (c === 'i' || c === 'I') return instance
    if (c === '%') return '%'
    assert.fail(`specifier %${c} is not emulated by this test`)
  })
}

/** Words of an Environment=/ExecStart= value: whitespace-separated, double or single quoted. */
function words(text: string): string[] {
  return [...text.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)].map(
    (m) => m[1]?.replace(/\\(.)/g, '$1') ?? m[2] ?? m[3]!,
  )
}

/** An EnvironmentFile: KEY=value lines, `#`/`;` comments, optional quotes around the value. */
function parseEnvironmentFile(text: string): [string, string][] {
  const out: [string, string][] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line)
    assert.ok(m, `not an environment file line: ${line}`)
    out.push([m[1]!, m[2]!.replace(/^"(.*)"$|^'(.*)'$/, '$1$2')])
  }
  return out
}

/** Paths of the units on a real host, and where this test keeps each. */
function hostPaths(dir: string): [string, string][] {
  return [
    ['/opt/petstore', ROOT],
    ['/usr/bin/node', process.execPath],
    ['/var/lib/petstore', join(dir, 'var-lib-petstore')],
    ['/var/cache/petstore', join(dir, 'var-cache-petstore')],
    ['/etc/petstore', join(dir, 'etc-petstore')],
  ]
}

function mapPaths(text: string, paths: [string, string][]): string {
  return paths.reduce((s, [from, to]) => s.replaceAll(from, to), text)
}

/**
 * The environment of the service: systemd's base, then each Environment= line in order (an
 * empty one resets the list), then each EnvironmentFile= in order, overriding both (a `-` prefix
 * makes the file optional). With `paths`, files are read from, and values point to, the test's
 * places; without, only the unit's own lines count.
 */
function serviceEnvironment(
  unit: Unit,
  instance: string,
  paths?: [string, string][],
): Record<string, string> {
  let env: Record<string, string> = {}
  for (const line of values(unit, 'Service', 'Environment')) {
    if (line === '') env = {}
    for (const word of words(expandSpecifiers(line, instance))) {
      const eq = word.indexOf('=')
      assert.ok(eq > 0, `Environment= word without "=": ${word}`)
      env[word.slice(0, eq)] = word.slice(eq + 1)
    }
  }
  if (paths) {
    for (const line of values(unit, 'Service', 'EnvironmentFile')) {
      const optional = line.startsWith('-')
      const file = mapPaths(expandSpecifiers(optional ? line.slice(1) : line, instance), paths)
      if (optional && !existsSync(file)) continue
      for (const [k, v] of parseEnvironmentFile(readFileSync(file, 'utf8'))) env[k] = v
    }
    for (const k of Object.keys(env)) env[k] = mapPaths(env[k]!, paths)
  }
  return { PATH: SYSTEMD_PATH, ...env }
}

interface UnitRun {
  proc: Proc
  port: number
  stateDir: string
  cacheDir: string
  killSignal: NodeJS.Signals
}

/**
 * Runs a unit as systemd would start it: ExecStart in WorkingDirectory with the service
 * environment, after StateDirectory= and CacheDirectory= are created. `files` are written under
 * /etc/petstore first.
 */
async function runUnit(
  t: TestContext,
  unitFile: string,
  instance: string,
  files: Record<string, string>,
): Promise<UnitRun> {
  const unit = parseUnit(readFileSync(join(DEPLOY, unitFile), 'utf8'))
  const dir = tempDir(t)
  const paths = hostPaths(dir)
  const map = (s: string) => mapPaths(expandSpecifiers(s, instance), paths)
  mkdirSync(map('/etc/petstore'))
  for (const [name, content] of Object.entries(files)) writeFileSync(map(name), content)
  const stateDir = map(`/var/lib/${value(unit, 'Service', 'StateDirectory')}`)
  mkdirSync(stateDir, { mode: 0o750 })
  const cacheDir = map(`/var/cache/${value(unit, 'Service', 'CacheDirectory')}`)
  mkdirSync(cacheDir, { mode: 0o700 })

  const execStart = value(unit, 'Service', 'ExecStart')
  assert.match(execStart, /^[^-@:+!$][^$]*$/, 'ExecStart has no prefix or variable to emulate')
  const argv = words(execStart).map(map)
  assert.deepEqual(argv, [process.execPath, ...NODE_FLAGS, MAIN, 'serve'])
  const proc = launch(t, argv, {
    cwd: map(value(unit, 'Service', 'WorkingDirectory')),
    env: serviceEnvironment(unit, instance, paths),
  })
  const m = await proc.waitFor(LISTENING)
  const killSignal = value(unit, 'Service', 'KillSignal') as NodeJS.Signals
  return { proc, port: Number(m[1]), stateDir, cacheDir, killSignal }
}

async function assertReadyAndServing(port: number): Promise<void> {
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
  assert.equal(ready.status, 200)
  assert.deepEqual(await ready.json(), { status: 'ready' })
}

storeIndependent(() => {
  test("every way of starting the service gives node the bin's flags", () => {
    assert.deepEqual(NODE_FLAGS, ['--no-memory-reducer', '--max-semi-space-size=8'])
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
    // `exec`: npm signals the shell it starts, so node must be that process (test/deploy/supervisor.test.ts).
    assert.equal(
      pkg.scripts.start,
      `exec node --enable-source-maps ${NODE_FLAGS.join(' ')} dist/main.js serve`,
    )
    assert.deepEqual(BENCH_NODE_FLAGS, NODE_FLAGS)
    for (const file of ['petstore.service', 'petstore@.service']) {
      const unit = parseUnit(readFileSync(join(DEPLOY, file), 'utf8'))
      assert.equal(
        value(unit, 'Service', 'ExecStart'),
        `/usr/bin/node ${NODE_FLAGS.join(' ')} /opt/petstore/dist/main.js serve`,
        file,
      )
    }
  })

  describe('deploy/petstore.service and deploy/petstore@.service', { concurrency: true }, () => {
    const single = () => parseUnit(readFileSync(join(DEPLOY, 'petstore.service'), 'utf8'))
    const template = () => parseUnit(readFileSync(join(DEPLOY, 'petstore@.service'), 'utf8'))

    test('the unit runs node on the built CLI as an unprivileged, sandboxed, restartable service', () => {
      const unit = single()
      assert.deepEqual([...unit.keys()], ['Unit', 'Service', 'Install'])
      assert.ok(
        ['simple', 'exec'].includes(value(unit, 'Service', 'Type')),
        'no readiness protocol',
      )
      const expected: Record<string, string> = {
        User: 'petstore',
        WorkingDirectory: '/opt/petstore',
        ExecStart: `/usr/bin/node ${NODE_FLAGS.join(' ')} /opt/petstore/dist/main.js serve`,
        Restart: 'on-failure',
        KillSignal: 'SIGTERM',
        NoNewPrivileges: 'yes',
        ProtectSystem: 'strict',
        ProtectHome: 'yes',
        PrivateTmp: 'yes',
        PrivateDevices: 'yes',
        CapabilityBoundingSet: '',
        StateDirectory: 'petstore',
        CacheDirectory: 'petstore',
        CacheDirectoryMode: '0700',
      }
      for (const [key, v] of Object.entries(expected)) assert.equal(value(unit, 'Service', key), v)
      assert.deepEqual(values(unit, 'Service', 'EnvironmentFile'), ['-/etc/petstore/petstore.env'])
      assert.deepEqual(values(unit, 'Install', 'WantedBy'), ['multi-user.target'])

      // systemd must not SIGKILL a service that is still draining and finishing requests.
      const config = loadConfig(serviceEnvironment(unit, ''), null)
      const timeoutStop = duration(value(unit, 'Service', 'TimeoutStopSec'))
      assert.ok(
        timeoutStop > config.drainDelayMs + config.shutdownTimeoutMs,
        `TimeoutStopSec ${timeoutStop}ms <= drain ${config.drainDelayMs}ms + shutdown ${config.shutdownTimeoutMs}ms`,
      )
      // ProtectSystem=strict leaves only the state and ReadWritePaths writable: the database too.
      assert.match(config.databaseUrl, /^sqlite:\//)
      const databaseDir = dirname(config.databaseUrl.slice('sqlite:'.length))
      const writable = [
        ...values(unit, 'Service', 'ReadWritePaths'),
        `/var/lib/${value(unit, 'Service', 'StateDirectory')}`,
      ]
      assert.ok(
        writable.some((w) => databaseDir === w || databaseDir.startsWith(`${w}/`)),
        `${databaseDir} is not writable under ProtectSystem=strict`,
      )
      assert.equal(config.host, '127.0.0.1')
      assert.equal(config.trustProxy, true)
    })

    test('the template differs from the unit only in its instance port, metrics port and names', () => {
      const strip = (unit: Unit, keys: string[]) =>
        [...unit].map(([name, lines]) => [name, lines.filter(([k]) => !keys.includes(k))])
      const differing = ['Description', 'Environment', 'EnvironmentFile', 'SyslogIdentifier']
      assert.deepEqual(strip(template(), differing), strip(single(), differing))
      const unit = template()
      assert.deepEqual(values(unit, 'Service', 'EnvironmentFile'), [
        '-/etc/petstore/petstore.env',
        '-/etc/petstore/petstore@%i.env',
      ])
      const env = serviceEnvironment(unit, '2')
      const { PORT, PETSTORE_METRICS_PORT, ...rest } = env
      assert.deepEqual([PORT, PETSTORE_METRICS_PORT], ['8082', '9462'])
      const { PORT: _, ...singleRest } = serviceEnvironment(single(), '')
      assert.deepEqual(rest, singleRest)
    })

    test('systemd-analyze verify accepts both units, and rates their sandbox exposure low', (t) => {
      const analyze = tool('systemd-analyze')
      // verify checks that ExecStart's program exists: point it at the node running the test.
      const dir = tempDir(t)
      for (const name of ['petstore.service', 'petstore@.service']) {
        const text = readFileSync(join(DEPLOY, name), 'utf8')
        writeFileSync(join(dir, name), text.replaceAll('/usr/bin/node', process.execPath))
      }
      const units = ['petstore.service', 'petstore@1.service'].map((u) => join(dir, u))
      const verify = spawnSync(analyze, ['verify', '--man=no', ...units], { encoding: 'utf8' })
      assert.deepEqual(
        { status: verify.status, stdout: verify.stdout, stderr: verify.stderr },
        { status: 0, stdout: '', stderr: '' },
      )
      for (const unit of units) {
        const security = spawnSync(
          analyze,
          ['security', '--offline=yes', '--threshold=20', '--no-pager', unit],
          { encoding: 'utf8' },
        )
        assert.equal(security.status, 0, security.stdout + security.stderr)
        const m = /Overall exposure level for \S+: (\d+\.\d) /.exec(security.stdout)
        assert.ok(m, security.stdout)
        assert.ok(
          Number(m[1]) <= 2,
          `exposure ${m[1]} of ${unit} is above 2.0 (0 is best, 10 worst)`,
        )
      }
    })

    test('its ExecStart, with its Environment= and EnvironmentFile=, serves and exits 0 on KillSignal', async (t) => {
      const run = await runUnit(t, 'petstore.service', '', {
        '/etc/petstore/petstore.env': [
          '# Settings of this host; they override the unit Environment= lines.',
          'PORT=0',
          `PETSTORE_API_KEYS="${API_KEY}"`,
          'PETSTORE_METRICS_PORT=off',
          'PETSTORE_DRAIN_DELAY=0s',
          '',
        ].join('\n'),
      })
      assert.notEqual(run.port, 8080, 'PORT from the environment file wins over Environment=')
      await assertReadyAndServing(run.port)
      const pets = await fetch(`http://127.0.0.1:${run.port}/v1/pets`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      })
      assert.equal(pets.status, 200)
      assert.equal(await pets.text(), '[]')
      // Environment=PETSTORE_DATABASE_URL put the database in the state directory.
      assert.ok(existsSync(join(run.stateDir, 'petstore.db')), 'database in StateDirectory')
      assert.match(run.proc.output(), /^\{"level":30,/m, 'PETSTORE_LOG_FORMAT=json')

      run.proc.child.kill(run.killSignal)
      assert.deepEqual(await run.proc.exited, { code: 0, signal: null })
      // Environment=PETSTORE_COMPILE_CACHE put Node's compile cache (Node 22.1+), written at exit,
      // in CacheDirectory: one directory, named by Node's version and flags.
      assert.equal(readdirSync(run.cacheDir).length, 'enableCompileCache' in nodeModule ? 1 : 0)
    })

    test('an instance of the template reads its own environment file after the shared one, and exits 0 on KillSignal', async (t) => {
      // The instance's file moves it off 808N/946N (the mapping itself is checked above), so the
      // test takes no fixed port.
      const run = await runUnit(t, 'petstore@.service', '3', {
        '/etc/petstore/petstore.env': `PETSTORE_API_KEYS=${API_KEY}\nPETSTORE_DRAIN_DELAY=0s\nPETSTORE_RATE_LIMIT_MAX=5\n`,
        '/etc/petstore/petstore@3.env':
          'PORT=0\nPETSTORE_METRICS_PORT=0\nPETSTORE_RATE_LIMIT_MAX=7\n',
      })
      assert.notEqual(run.port, 8083)
      await assertReadyAndServing(run.port)
      const pets = await fetch(`http://127.0.0.1:${run.port}/v1/pets`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      })
      assert.equal(pets.status, 200)
      assert.equal(pets.headers.get('ratelimit-policy'), '"default";q=7;w=60')
      const [, metricsUrl] = await run.proc.waitFor(new RegExp(`^${METRICS_BANNER} (\\S+)$`, 'm'))
      assert.notEqual(new URL(String(metricsUrl)).port, '9463')
      const metrics = await fetch(String(metricsUrl))
      assert.equal(metrics.status, 200)
      assert.match(await metrics.text(), /^# HELP /m)

      run.proc.child.kill(run.killSignal)
      assert.deepEqual(await run.proc.exited, { code: 0, signal: null })
    })

    test('instances started together on a new database file all migrate it and succeed', async (t) => {
      // systemd starts petstore@1 and petstore@2 at once; each migrates the shared file on start.
      const dir = tempDir(t)
      const env = {
        PATH: SYSTEMD_PATH,
        PETSTORE_DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
      }
      const runs = Array.from({ length: 8 }, () =>
        launch(t, [process.execPath, MAIN, 'migrate'], { cwd: dir, env }),
      )
      const exits = await Promise.all(runs.map((r) => r.exited))
      assert.deepEqual(
        runs.map((r, n) => ({ ...exits[n], stderr: /petstore: .*/.exec(r.output())?.[0] ?? '' })),
        runs.map(() => ({ code: 0, signal: null, stderr: '' })),
      )
    })
  })

  // ---------------------------------------------------------------- nginx

  interface Reply {
    status: number
    headers: Record<string, string | string[] | undefined>
    body: string
  }

  interface Instance {
    proc: StartedService
    port: number
    /** Whether this instance has logged a request with that X-Request-Id so far. */
    served(requestId: string): boolean
    /** Resolves once this instance logs a request with that X-Request-Id (logs trail responses). */
    logged(requestId: string): Promise<void>
  }

  interface Front {
    port: number
    origin: string
    instances: [Instance, Instance]
    nginx: Proc
    /** HTTPS over HTTP/1.1 with keep-alive, trusting the test certificate. */
    request(
      method: string,
      path: string,
      headers?: Record<string, string>,
      body?: string,
    ): Promise<Reply>
    /** One request over an HTTP/2 session to nginx. */
    h2(
      method: string,
      path: string,
      headers?: Record<string, string>,
      body?: string,
    ): Promise<Reply>
    accessLog(): Record<string, unknown>[]
    /** nginx's access log line of a request, once written (it may trail the response). */
    accessLine(requestId: string): Promise<Record<string, unknown>>
    /** The instance that logs a request, once it does. */
    servedBy(requestId: string): Promise<Instance>
  }

  /**
   * deploy/nginx.conf with its host ports and paths replaced by the test's: the only change. Each
   * replaced text must be there, and no system path may be left.
   */
  function renderNginxConf(replacements: [string, string][]): string {
    let conf = readFileSync(join(DEPLOY, 'nginx.conf'), 'utf8')
    for (const [from, to] of replacements) {
      assert.ok(conf.includes(from), `deploy/nginx.conf no longer contains ${JSON.stringify(from)}`)
      conf = conf.replaceAll(from, to)
    }
    const left = /(?<![\w.])\/(etc|var|run|usr)\//.exec(conf.replace(/^\s*#.*$/gm, ''))
    assert.equal(left, null, 'a system path of deploy/nginx.conf is not replaced')
    return conf
  }

  async function startInstance(t: TestContext, dir: string): Promise<Instance> {
    // Both instances share one file in `dir`, as on one host: SQLite's WAL lets processes share it.
    const proc = await startService(t, {
      cwd: dir,
      env: {
        PETSTORE_API_KEYS: API_KEY,
        PETSTORE_TRUST_PROXY: 'true',
        PETSTORE_LOG_FORMAT: 'json',
      },
    })
    return {
      proc,
      port: proc.port,
      served: (id) => proc.stdout().includes(`"${id}"`),
      logged: async (id) => {
        await proc.waitFor(new RegExp(`"${id.replace(/[^A-Za-z0-9]/g, '\\$&')}"`))
      },
    }
  }

  /** Two instances on one database, nginx in front of them on a free port with a fresh certificate. */
  async function startFront(t: TestContext): Promise<Front> {
    const nginxBin = tool('nginx')
    const openssl = tool('openssl')
    const dir = tempDir(t)
    const cert = join(dir, 'cert.pem')
    const key = join(dir, 'key.pem')
    execFileSync(
      openssl,
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
        ...['-days', '2', '-subj', `/CN=${PUBLIC_HOST}`],
        ...['-addext', `subjectAltName=DNS:${PUBLIC_HOST}`, '-keyout', key, '-out', cert],
      ],
      { stdio: 'pipe' },
    )
    const ca = readFileSync(cert)

    const instances = await Promise.all([startInstance(t, dir), startInstance(t, dir)])
    const port = await freePort()
    mkdirSync(join(dir, 'log'))
    mkdirSync(join(dir, 'temp'))
    const conf = join(dir, 'nginx.conf')
    writeFileSync(
      conf,
      renderNginxConf([
        ['listen 443 ssl http2;', `listen ${port} ssl http2;`],
        ['server 127.0.0.1:8081 ', `server 127.0.0.1:${instances[0].port} `],
        ['server 127.0.0.1:8082 ', `server 127.0.0.1:${instances[1].port} `],
        ['/etc/ssl/petstore/fullchain.pem', cert],
        ['/etc/ssl/petstore/privkey.pem', key],
        ['/var/log/nginx/', `${dir}/log/`],
        ['/var/lib/nginx/', `${dir}/temp/`],
        ['/run/nginx.pid', `${dir}/nginx.pid`],
      ]),
    )
    // SIGTERM is nginx's fast shutdown: the master stops its workers before it exits.
    const nginx = launch(t, [nginxBin, '-c', conf, '-p', `${dir}/`, '-g', 'daemon off;'], {
      cwd: dir,
      env: process.env,
      stopSignal: 'SIGTERM',
    })

    const agent = new https.Agent({ keepAlive: true, ca, servername: PUBLIC_HOST, maxSockets: 8 })
    defer(t, () => agent.destroy())
    const request: Front['request'] = (method, path, headers = {}, body) =>
      new Promise((resolve, reject) => {
        const req = https.request(
          {
            agent,
            host: '127.0.0.1',
            port,
            servername: PUBLIC_HOST,
            method,
            path,
            headers: { host: `${PUBLIC_HOST}:${port}`, ...headers },
          },
          (res) => {
            assert.equal(res.httpVersion, '1.1')
            let text = ''
            res.setEncoding('utf8').on('data', (chunk: string) => {
              text += chunk
            })
            res.on('end', () =>
              resolve({ status: res.statusCode!, headers: res.headers, body: text }),
            )
            res.on('error', reject)
          },
        )
        req.on('error', reject)
        req.end(body)
      })

    // nginx prints nothing when it is ready: it is once it answers.
    for (;;) {
      if (nginx.child.exitCode !== null) assert.fail(`nginx exited:\n${nginx.output()}`)
      const ok = await request('GET', '/healthz').then(
        () => true,
        () => false,
      )
      if (ok) break
      await sleep(50)
    }

    let session: http2.ClientHttp2Session | undefined
    defer(t, () => session?.close())
    const h2: Front['h2'] = (method, path, headers = {}, body) => {
      session ??= http2.connect(`https://127.0.0.1:${port}`, { ca, servername: PUBLIC_HOST })
      const s = session
      return new Promise((resolve, reject) => {
        const stream = s.request({
          ':method': method,
          ':path': path,
          ':authority': `${PUBLIC_HOST}:${port}`,
          ...headers,
        })
        let responseHeaders: IncomingHttpHeaders = {}
        let status = 0
        stream.on('response', (h) => {
          assert.equal(s.alpnProtocol, 'h2')
          status = Number(h[':status'])
          responseHeaders = h
        })
        let text = ''
        stream.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk
        })
        stream.on('end', () => resolve({ status, headers: responseHeaders, body: text }))
        stream.on('error', reject)
        stream.end(body)
      })
    }

    const accessLog = () =>
      readFileSync(join(dir, 'log/petstore.access.log'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)

    const accessLine = async (id: string) => {
      for (;;) {
        const line = accessLog().find((l) => l.requestId === id)
        if (line) return line
        if (nginx.child.exitCode !== null) assert.fail(`nginx exited:\n${nginx.output()}`)
        await sleep(20)
      }
    }
    const servedBy = (id: string) => Promise.any(instances.map((i) => i.logged(id).then(() => i)))

    return {
      port,
      origin: `https://${PUBLIC_HOST}:${port}`,
      instances,
      nginx,
      request,
      h2,
      accessLog,
      accessLine,
      servedBy,
    }
  }

  const auth = { authorization: `Bearer ${API_KEY}` }
  const jsonBody = { ...auth, 'content-type': 'application/json' }

  /** The headers nginx adds to every response at the edge. */
  function assertEdgeHeaders(reply: Reply, requestId: string): void {
    assert.equal(reply.headers['strict-transport-security'], 'max-age=31536000')
    assert.equal(reply.headers['x-request-id'], requestId)
  }

  describe('deploy/nginx.conf', { concurrency: true, timeout: 180_000 }, () => {
    test('terminates TLS with HTTP/2 and HTTP/1.1, spreads requests over both instances, and the next-page link has the public https origin', async (t) => {
      const front = await startFront(t)

      const created: Reply[] = []
      for (const name of ['Rex', 'Tom', 'Kit']) {
        const id = `deploy-create-${name}`
        created.push(
          await front.h2(
            'POST',
            '/v1/pets',
            { ...jsonBody, 'x-request-id': id },
            `{"name":"${name}","categoryId":9223372036854775807}`,
          ),
        )
        assertEdgeHeaders(created.at(-1)!, id)
      }
      assert.deepEqual(
        created.map((r) => [r.status, r.headers.location, r.body]),
        [
          [201, '/v1/pets/1', '{"id":1,"name":"Rex","categoryId":9223372036854775807}'],
          [201, '/v1/pets/2', '{"id":2,"name":"Tom","categoryId":9223372036854775807}'],
          [201, '/v1/pets/3', '{"id":3,"name":"Kit","categoryId":9223372036854775807}'],
        ],
      )

      // The instance builds the link from X-Forwarded-Proto and X-Forwarded-Host (it trusts the
      // proxy): nginx's https origin, not the instance's http://127.0.0.1:<port>.
      const nextLink = new RegExp(
        `^<(${front.origin.replace(/\./g, '\\.')}/v1/pets\\?limit=2&cursor=[A-Za-z0-9_-]+)>; rel="next"$`,
      )
      const first = await front.request('GET', '/v1/pets?limit=2', {
        ...auth,
        'x-request-id': 'deploy-list-1',
      })
      assert.equal(first.status, 200)
      assertEdgeHeaders(first, 'deploy-list-1')
      assert.equal(first.headers['cache-control'], 'no-store')
      assert.equal(
        first.body,
        '[{"id":1,"name":"Rex","categoryId":9223372036854775807},{"id":2,"name":"Tom","categoryId":9223372036854775807}]',
      )
      const next = nextLink.exec(String(first.headers.link))
      assert.ok(next, String(first.headers.link))
      const overH2 = await front.h2('GET', '/v1/pets?limit=2', {
        ...auth,
        'x-request-id': 'h2-list',
      })
      assert.match(String(overH2.headers.link), nextLink)

      const nextUrl = new URL(next[1]!)
      const second = await front.request('GET', nextUrl.pathname + nextUrl.search, {
        ...auth,
        'x-request-id': 'deploy-list-2',
      })
      assert.deepEqual(
        [second.status, second.headers.link, second.body],
        [200, undefined, '[{"id":3,"name":"Kit","categoryId":9223372036854775807}]'],
      )

      // A client-sent X-Forwarded-For is replaced by nginx, so it cannot forge its address.
      const spoofed = await front.request('GET', '/v1/pets?limit=1', {
        ...auth,
        'x-forwarded-for': '203.0.113.77',
        'x-request-id': 'deploy-spoof',
      })
      assert.equal(spoofed.status, 200)

      // Each request reached one instance, which logged the id the client sent, as nginx's access
      // log says; round robin gave both instances some.
      const [a, b] = front.instances
      const ids = [
        ...['Rex', 'Tom', 'Kit'].map((n) => `deploy-create-${n}`),
        'deploy-list-1',
        'h2-list',
        'deploy-list-2',
        'deploy-spoof',
      ]
      const servers = await Promise.all(ids.map(front.servedBy))
      for (const [n, id] of ids.entries()) {
        const server = servers[n]!
        assert.equal((server === a ? b : a).served(id), false, `${id} reached both instances`)
        const line = await front.accessLine(id)
        assert.equal(line.upstreamAddr, `127.0.0.1:${server.port}`)
      }
      assert.ok(servers.includes(a) && servers.includes(b), 'round robin reached both instances')
      const spoofLine = servers
        .at(-1)!
        .proc.stdout()
        .split('\n')
        .find((l) => l.includes('"deploy-spoof"'))!
      assert.equal(spoofLine.includes('203.0.113.77'), false, spoofLine)
    })

    test('a body just over 64 KiB gets the service 413; a far larger one the same Error body from nginx', async (t) => {
      const front = await startFront(t)
      const bodyOf = (bytes: number) => {
        const frame = '{"name":"","categoryId":1}'
        return `{"name":"${'a'.repeat(bytes - frame.length)}","categoryId":1}`
      }
      const small = await front.request(
        'POST',
        '/v1/pets',
        { ...jsonBody, 'x-request-id': 'big-1' },
        bodyOf(64 * 1024 + 1),
      )
      const large = await front.request(
        'POST',
        '/v1/pets',
        { ...jsonBody, 'x-request-id': 'big-2' },
        bodyOf(1024 * 1024),
      )
      for (const [reply, id] of [
        [small, 'big-1'],
        [large, 'big-2'],
      ] as const) {
        assert.equal(reply.status, 413)
        assertEdgeHeaders(reply, id)
        assert.equal(reply.headers['content-type'], 'application/json; charset=utf-8')
        assert.equal(reply.headers['cache-control'], 'no-store')
        assert.deepEqual(JSON.parse(reply.body), SERVICE_413)
      }
      // nginx passed 64 KiB + 1 on and the service answered; it answered 1 MiB itself.
      const ports = front.instances.map((i) => `127.0.0.1:${i.port}`)
      const passed = await front.accessLine('big-1')
      assert.ok(ports.includes(String(passed.upstreamAddr)), String(passed.upstreamAddr))
      assert.deepEqual([passed.status, passed.upstreamStatus], [413, '413'])
      const stopped = await front.accessLine('big-2')
      assert.deepEqual([stopped.status, stopped.upstreamAddr], [413, ''])
      const list = await front.request('GET', '/v1/pets', auth)
      assert.deepEqual([list.status, list.body], [200, '[]'])
    })

    test('SIGTERM to one instance loses no GET: nginx retries on the other; with both gone it answers 503 in the Error body', async (t) => {
      const front = await startFront(t)
      const [a, b] = front.instances
      const pet = await front.request('POST', '/v1/pets', jsonBody, '{"name":"Rex","categoryId":1}')
      assert.equal(pet.status, 201)

      // Four clients send GETs without pause while instance A shuts down.
      const results: { id: string; status: number | string; body: string }[] = []
      let stop = false
      const waiters: { count: number; resolve: () => void }[] = []
      const settle = () => {
        for (const w of waiters.filter((w) => results.length >= w.count)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve()
        }
      }
      const completed = (count: number) =>
        new Promise<void>((resolve) => {
          waiters.push({ count, resolve })
          settle()
        })
      const client = async (c: number) => {
        for (let n = 0; !stop; n++) {
          const id = `drain-${c}-${n}`
          const reply = await front
            .request('GET', '/v1/pets?limit=1', { ...auth, 'x-request-id': id })
            .catch((err: Error) => ({ status: err.message, body: '' }))
          results.push({ id, status: reply.status, body: reply.body })
          settle()
        }
      }
      const clients = Promise.all([0, 1, 2, 3].map(client))

      await completed(40)
      a.proc.child.kill('SIGTERM')
      assert.deepEqual(await a.proc.exited, { code: 0, signal: null })
      await completed(results.length + 40)
      stop = true
      await clients

      const failed = results.filter(
        (r) => r.status !== 200 || r.body !== '[{"id":1,"name":"Rex","categoryId":1}]',
      )
      assert.deepEqual(failed, [])
      // nginx met the stopped instance and passed those GETs to the other one.
      const retried = front
        .accessLog()
        .filter((l) => l.upstreamAddr === `127.0.0.1:${a.port}, 127.0.0.1:${b.port}`)
      assert.ok(retried.length > 0, 'no GET was retried on the other instance')
      for (const l of retried) assert.deepEqual([l.method, l.status], ['GET', 200])
      // A's log is complete (it has exited): the last requests all went to B.
      for (const r of results.slice(-20)) {
        await b.logged(r.id)
        assert.equal(a.served(r.id), false, r.id)
      }

      b.proc.child.kill('SIGTERM')
      assert.deepEqual(await b.proc.exited, { code: 0, signal: null })
      const down = await front.request('GET', '/v1/pets', { ...auth, 'x-request-id': 'all-down' })
      assert.equal(down.status, 503)
      assertEdgeHeaders(down, 'all-down')
      assert.equal(down.headers['content-type'], 'application/json; charset=utf-8')
      assert.equal(down.headers['cache-control'], 'no-store')
      assert.equal(down.headers['retry-after'], '5')
      assert.deepEqual(JSON.parse(down.body), {
        code: 'service_unavailable',
        message: 'no instance of the service is reachable',
        status: 503,
      })
    })
  })
})
