// Every response names its request: the caller's X-Request-Id when it is sane, else a fresh one.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/

export function requestId(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id']
  return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID()
}
