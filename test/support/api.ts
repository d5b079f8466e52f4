// Calling a `petstore` process over real sockets: one request per connection, every pet by
// walking the pages, and a load of creates from many clients at once.
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { DB_READ_ONLY, DB_UNREACHABLE } from './errors.js'
import type { StartedService } from './process.js'

export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request on a connection of its own (no keep-alive), so each is handed out anew. */
export function call(
  port: number,
  opts: {
    method?: string
    path: string
    key?: string
    body?: string
    headers?: Record<string, string>
  },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`
    if (opts.body !== undefined) headers['content-type'] = 'application/json'
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: opts.method ?? 'GET',
        path: opts.path,
        headers,
        agent: false,
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(opts.body)
  })
}

export interface Pet {
  id: number
  name: string
  categoryId: number
  status?: string
}

/**
 * Every pet, walking `Link: <...>; rel="next"` from a first page of `limit`; page n is asked of
 * `services[n % services.length]`. `parse` reads a page (JSON.parse unless given).
 */
export async function listAllPets<P = Pet>(
  services: StartedService | StartedService[],
  key: string,
  opts: { limit?: number; parse?: (text: string) => unknown } = {},
): Promise<P[]> {
  const all = Array.isArray(services) ? services : [services]
  const pets: P[] = []
  let path = `/v1/pets?limit=${opts.limit ?? 100}`
  for (let page = 0; ; page++) {
    const res: Reply = await call(all[page % all.length]!.port, { path, key })
    assert.equal(res.status, 200, res.body)
    const listed = (opts.parse ?? JSON.parse)(res.body)
    assert.ok(Array.isArray(listed), res.body)
    pets.push(...(listed as P[]))
    const link = res.headers.link
    if (link === undefined) return pets
    const next = /^<(http:\/\/[^>]+)>; rel="next"$/.exec(String(link))
    assert.ok(next, `Link: ${link}`)
    const url = new URL(next[1]!)
    path = `${url.pathname}${url.search}`
  }
}

export interface CreateOutcome {
  name: string
  reply: Reply
}

/**
 * Each create answered 201 with its pet, or 503 with a whole Error body (the database not
 * reachable, or read-only) and `Retry-After: 1`; the pets made.
 */
export function createdPets(outcomes: CreateOutcome[]): { id: number }[] {
  const created: { id: number }[] = []
  for (const { name, reply } of outcomes) {
    if (reply.status === 503) {
      const body = JSON.parse(reply.body) as { message: string }
      const expected = body.message === DB_READ_ONLY.message ? DB_READ_ONLY : DB_UNREACHABLE
      assert.deepEqual(body, expected, name)
      assert.equal(reply.headers['retry-after'], '1', name)
      assert.equal(reply.headers['content-type'], 'application/json; charset=utf-8', name)
      continue
    }
    assert.equal(reply.status, 201, `${name}: ${reply.body}`)
    const pet = JSON.parse(reply.body) as { id: number }
    assert.deepEqual(pet, { id: pet.id, name, categoryId: 7, status: 'available' })
    created.push(pet)
  }
  return created
}

/**
 * `clients` clients creating pets one after another with `key`, each pet with a name never used
 * before, until stopped: what each create was answered, and how many were answered `status`
 * (with exactly `body`, when given).
 */
export function startCreateLoad(port: number, key: string, clients: number) {
  const outcomes: CreateOutcome[] = []
  let stopped = false
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let n = 0; !stopped; n++) {
      const name = `load-${c}-${n}`
      const body = JSON.stringify({ name, categoryId: 7, status: 'available' })
      outcomes.push({
        name,
        reply: await call(port, { method: 'POST', path: '/v1/pets', key, body }),
      })
    }
  })
  return {
    outcomes,
    count: (status: number, body?: object) =>
      outcomes.filter(
        (o) =>
          o.reply.status === status &&
          (body === undefined || o.reply.body === JSON.stringify(body)),
      ).length,
    stop: async () => {
      stopped = true
      await Promise.all(loops)
    },
  }
}
