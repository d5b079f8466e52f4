// nginx in front of service instances for `npm run bench`: deploy/nginx.conf with its ports and
// paths replaced, run as a child process (`daemon off`) pinned to one core, everything in one folder.
import { execFileSync, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { join } from 'node:path'
import { freePort, ROOT, type Running } from './service.js'

const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p)) ?? 'nginx'

export interface Front extends Running {
  /** https://127.0.0.1:<port> */
  origin: string
  /** The self-signed certificate nginx presents, to trust in checks. */
  ca: Buffer
  /** nginx's master and its workers, whose CPU time is the proxy's. */
  pids(): number[]
}

/** deploy/nginx.conf with each `[from, to]` replaced; each `from` must be there, no system path left. */
function render(replacements: [string, string][]): string {
  let conf = readFileSync(join(ROOT, 'deploy', 'nginx.conf'), 'utf8')
  for (const [from, to] of replacements) {
    if (!conf.includes(from)) throw new Error(`deploy/nginx.conf no longer contains ${from}`)
    conf = conf.replaceAll(from, to)
  }
  const left = /(?<![\w.])\/(etc|var|run|usr)\//.exec(conf.replace(/^\s*#.*$/gm, ''))
  if (left) throw new Error('a system path of deploy/nginx.conf is not replaced by the bench')
  return conf
}

function healthz(port: number, ca: Buffer): Promise<number> {
  return new Promise((ok) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', ca, agent: false }, (res) => {
      res.resume()
      res.on('end', () => ok(res.statusCode ?? 0))
    })
    req.on('error', () => ok(0))
    req.end()
  })
}

/** The processes nginx's master has started (its workers). */
function children(pid: number): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
    return text === '' ? [] : text.split(' ').map(Number)
  } catch {
    return []
  }
}

/**
 * Starts nginx on a free port in front of the instances on `upstreams` (loopback ports), pinned to
 * `cpu`, with its config, certificate, logs, temp files and pid in `dir`; resolves once it answers
 * GET /healthz with 200.
 */
export async function startNginx(dir: string, upstreams: number[], cpu: number): Promise<Front> {
  mkdirSync(join(dir, 'log'), { recursive: true })
  mkdirSync(join(dir, 'temp'), { recursive: true })
  // As root, nginx's workers run as www-data (`user` in the config): they must reach the folder.
  chmodSync(dir, 0o755)
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      ...['-keyout', key, '-out', cert],
    ],
    { stdio: 'pipe' },
  )
  const ca = readFileSync(cert)
  const port = await freePort()
  const servers = (ports: number[]) =>
    ports.map((p) => `server 127.0.0.1:${p} max_fails=1 fail_timeout=10s;`).join('\n        ')
  const conf = join(dir, 'nginx.conf')
  writeFileSync(
    conf,
    render([
      // `auto` is a worker per core; pinned, nginx has one core, so one worker.
      ['worker_processes auto;', 'worker_processes 1;'],
      ['listen 443 ssl http2;', `listen 127.0.0.1:${port} ssl http2;`],
      ['server 127.0.0.1:8081 max_fails=1 fail_timeout=10s;', servers(upstreams.slice(0, 1))],
      ['server 127.0.0.1:8082 max_fails=1 fail_timeout=10s;', servers(upstreams.slice(1))],
      ['/etc/ssl/petstore/fullchain.pem', cert],
      ['/etc/ssl/petstore/privkey.pem', key],
      ['/var/log/nginx/', `${dir}/log/`],
      ['/var/lib/nginx/', `${dir}/temp/`],
      ['/run/nginx.pid', `${dir}/nginx.pid`],
    ]),
  )
  const started = performance.now()
  // taskset execs nginx, so the child is nginx's master; its workers inherit the core.
  const child = spawn(
    'taskset',
    ['-c', String(cpu), NGINX, '-c', conf, '-p', `${dir}/`, '-g', 'daemon off;'],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let output = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk
  })
  // nginx prints nothing when it is ready: it is once it answers.
  while ((await healthz(port, ca)) !== 200) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}):\n${output}`)
    await new Promise((r) => setTimeout(r, 20))
  }
  const master = child.pid!
  return {
    child,
    port,
    startupMs: performance.now() - started,
    origin: `https://127.0.0.1:${port}`,
    ca,
    pids: () => [master, ...children(master)],
  }
}
