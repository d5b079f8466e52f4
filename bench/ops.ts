// The operations `npm run bench` loads a service with, and the check of one answer before the load.
import { writeFileSync } from 'node:fs'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { join } from 'node:path'
import { encodeCursor } from '../src/pets/cursor.js'
import { createScript } from './service.js'

export interface Op {
  name: string
  baseline: 'list' | 'create'
  path: string
  script?: string
  /** What a correct answer looks like, checked once before the load. */
  expect: { status: number; items?: number }
}

/** The five operations against a catalogue of `pets`; scripts go to `dir`. */
export function opsFor(pets: number, dir: string): Op[] {
  const createLua = createScript(dir)
  const getLua = join(dir, 'get.lua')
  // Walks the whole catalogue in a scattered order, so no single row stays hot.
  writeFileSync(
    getLua,
    `local i = 0\nrequest = function()\n  i = i + 1\n` +
      `  return wrk.format("GET", "/v1/pets/" .. ((i * 7919) % ${pets} + 1))\nend\n`,
  )
  const deep = encodeCursor(BigInt(Math.floor(pets * 0.9)))
  return [
    {
      name: 'list (limit 20)',
      baseline: 'list',
      path: '/v1/pets?limit=20',
      expect: { status: 200, items: 20 },
    },
    {
      name: 'list status=sold',
      baseline: 'list',
      path: '/v1/pets?limit=20&status=sold',
      expect: { status: 200, items: 20 },
    },
    {
      name: `list after cursor (id ${Math.floor(pets * 0.9)})`,
      baseline: 'list',
      path: `/v1/pets?limit=20&cursor=${deep}`,
      expect: { status: 200, items: 20 },
    },
    {
      name: 'get by id',
      baseline: 'list',
      path: `/v1/pets/${Math.floor(pets / 2)}`,
      script: getLua,
      expect: { status: 200 },
    },
    {
      name: 'create',
      baseline: 'create',
      path: '/v1/pets',
      script: createLua,
      expect: { status: 201 },
    },
  ]
}

/**
 * One request of `op` to `origin` (http://127.0.0.1:<port>, or https:// trusting the certificate
 * `ca`); throws unless the answer looks as `op.expect` says.
 */
export async function check(
  origin: string,
  key: string,
  op: Op,
  body?: string,
  ca?: Buffer,
): Promise<void> {
  const url = new URL(op.path, origin)
  const post = op.baseline === 'create'
  const { status, text } = await new Promise<{ status: number; text: string }>((ok, fail) => {
    const options = {
      method: post ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      agent: false as const,
    }
    const done = (res: IncomingMessage) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk
      })
      res.on('end', () => ok({ status: res.statusCode ?? 0, text }))
      res.on('error', fail)
    }
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { ...options, ...(ca ? { ca } : {}) }, done)
        : httpRequest(url, options, done)
    req.on('error', fail)
    req.end(post ? body : undefined)
  })
  const items = op.expect.items
  const parsed: unknown = JSON.parse(text)
  if (
    status !== op.expect.status ||
    (items !== undefined && (!Array.isArray(parsed) || parsed.length !== items))
  ) {
    throw new Error(`${op.name} at ${origin}: ${status} ${text.slice(0, 200)}`)
  }
}
