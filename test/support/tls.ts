// The service speaking TLS in a test: a self-signed certificate made by openssl, and the app
// listening with it on a fresh store, as startServer does.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, type TestContext } from 'node:test'
import { buildApp } from '../../src/app.js'
import { createApiKey } from '../../src/auth/api-keys.js'
import { type Clock, manualClock } from '../../src/clock.js'
import { type Config, configWith } from '../../src/config.js'
import { loadTls } from '../../src/http/tls.js'
import type { Metrics } from '../../src/observability/metrics.js'
import type { Store } from '../../src/storage/store.js'
import { openTestStore, tempDir } from './app.js'

export interface Certificate {
  certPath: string
  keyPath: string
  cert: Buffer
}

const certDirs: string[] = []
after(() => {
  for (const dir of certDirs) rmSync(dir, { recursive: true, force: true })
})

/** A fresh self-signed certificate for localhost and 127.0.0.1, valid for a day. */
export function makeCertificate(): Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-tls-'))
  certDirs.push(dir)
  const certPath = join(dir, 'cert.pem')
  const keyPath = join(dir, 'key.pem')
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-days',
        '1',
        '-keyout',
        keyPath,
        '-out',
        certPath,
      ],
      { stdio: 'pipe' },
    )
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(
        'openssl is not installed: run `npm run system-deps` (Debian package openssl)',
      )
    }
    throw err
  }
  return { certPath, keyPath, cert: readFileSync(certPath) }
}

let shared: Certificate | undefined
/** One certificate serves every test that only needs a valid one. */
export function certificate(): Certificate {
  shared ??= makeCertificate()
  return shared
}

export interface TlsServer {
  origin: string
  port: number
  key: string
  /** The store and clock the app was built with: for more keys. */
  store: Store
  clock: Clock
  close(): Promise<void>
}

/** buildApp + listen with the certificate, as startServer does, on a fresh store. */
export async function tlsServer(
  t: TestContext,
  opts: {
    http2: boolean
    isDraining?: () => boolean
    metrics?: Metrics
    config?: Partial<Config>
  },
): Promise<TlsServer> {
  const { certPath, keyPath } = certificate()
  const { store } = await openTestStore(t, tempDir(t), {})
  const clock = manualClock(new Date('2026-01-15T12:00:00Z'))
  const config = configWith({
    tlsCertPath: certPath,
    tlsKeyPath: keyPath,
    http2: opts.http2,
    hstsMaxAgeSeconds: 600,
    ...opts.config,
  })
  const { key } = await createApiKey(store, clock, 'tls-test')
  const app = await buildApp({
    config,
    store,
    clock,
    tls: loadTls(config),
    isDraining: opts.isDraining,
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  let closed: Promise<void> | undefined
  // The store closes after the test, by openTestStore.
  const close = () => {
    closed ??= app.close()
    return closed
  }
  t.after(close)
  const port = (app.server.address() as { port: number }).port
  return { origin: `https://127.0.0.1:${port}`, port, key, store, clock, close }
}
