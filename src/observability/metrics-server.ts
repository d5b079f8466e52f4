// The Prometheus endpoint, on a listener of its own: the API port never serves it, and it binds
// loopback unless the operator says otherwise, so figures about keys and traffic stay private.
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'
import type { ErrorCode } from '../errors.js'
import { plainErrorOutcome } from '../http/replies.js'

export interface MetricsServer {
  /** Where to scrape, e.g. `http://127.0.0.1:9464/metrics`. */
  url: string
  close(): Promise<void>
}

/** The API's Error body, so a wrong address gets the same shape of answer as anywhere else. */
function sendError(res: ServerResponse, code: ErrorCode, message: string, headers = {}) {
  const { status, headers: all, body } = plainErrorOutcome(code, message, headers)
  res.writeHead(status, ['content-type', 'application/json; charset=utf-8', ...all])
  res.end(body)
}

export async function startMetricsServer(
  registry: Registry,
  host: string,
  port: number,
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0]
    if (path !== '/metrics') {
      sendError(res, 'not_found', 'only /metrics is served here')
      return
    }
    if (req.method !== 'GET') {
      sendError(res, 'method_not_allowed', 'only GET is allowed on /metrics', { allow: 'GET' })
      return
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
        res.end(text)
      },
      () => sendError(res, 'internal_error', 'the metrics could not be collected'),
    )
  })
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error) =>
      reject(
        new Error(
          `metrics cannot listen on ${host}:${port} (${err.message}); set PETSTORE_METRICS_PORT to another port or off`,
        ),
      )
    server.once('error', failed)
    server.listen(port, host, () => {
      server.off('error', failed)
      resolve()
    })
  })
  const { address, family, port: bound } = server.address() as AddressInfo
  return {
    url: `http://${family === 'IPv6' ? `[${address}]` : address}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // A scraper's keep-alive connection would otherwise hold the close open.
        server.closeAllConnections()
      }),
  }
}
