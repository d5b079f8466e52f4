// The baseline of `npm run bench`: a bare node:http server, the least a Node process can do for
// the same requests. It checks `Authorization: Bearer <key>` as one fixed string, answers GET with
// a precomputed 20-pet JSON array and POST with 201 and a precomputed pet once the body is read, so
// its create costs what its list costs plus reading the body. Run as a child process, with the
// service's Node flags (NODE_FLAGS in service.ts): `node --no-memory-reducer
// --max-semi-space-size=8 --import tsx bench/baseline-server.ts <port> <key> [fastify]`; prints
// `listening <port>` when ready.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'

const port = Number(process.argv[2] ?? '0')
const key = process.argv[3] ?? ''
const expected = `Bearer ${key}`

const pets = Array.from({ length: 20 }, (_, i) => ({
  id: i + 1,
  name: `pet-${i + 1}`,
  categoryId: (i % 100) + 2,
  status: 'available',
}))
const listBody = Buffer.from(JSON.stringify(pets))
const createdBody = Buffer.from(
  JSON.stringify({ id: 1001, name: 'bench-pet', categoryId: 7, status: 'available' }),
)
const unauthorized = Buffer.from(
  JSON.stringify({ code: 'unauthorized', message: 'missing or invalid API key', status: 401 }),
)

const handler = (req: IncomingMessage, res: ServerResponse) => {
  if (req.headers.authorization !== expected) {
    res.writeHead(401, {
      'content-type': 'application/json',
      'content-length': unauthorized.length,
    })
    res.end(unauthorized)
    return
  }
  if (req.method === 'POST') {
    req.resume()
    req.once('end', () => {
      res.writeHead(201, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': createdBody.length,
        location: '/v1/pets/1001',
      })
      res.end(createdBody)
    })
    return
  }
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': listBody.length,
  })
  res.end(listBody)
}

/**
 * `fastify` as the third argument: the same answers from handlers on a bare Fastify app (no
 * logger, no hooks, no schemas), the most any pipeline built on Fastify's routing can do.
 */
const server = process.argv[4] === 'fastify' ? await bareFastify() : createServer(handler)

async function bareFastify(): Promise<Server> {
  const app = Fastify({ logger: false })
  // The body read whole and not parsed, as the node:http baseline reads it (and as the service
  // registers its JSON parser).
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  )
  const answer = (request: FastifyRequest, reply: FastifyReply, status: number, body: Buffer) => {
    if (request.headers.authorization !== expected) {
      return reply.code(401).type('application/json').send(unauthorized)
    }
    reply.code(status).type('application/json; charset=utf-8')
    if (status === 201) reply.header('location', '/v1/pets/1001')
    return reply.send(body)
  }
  app.get('/v1/pets', (request, reply) => answer(request, reply, 200, listBody))
  app.get('/v1/pets/:petId', (request, reply) => answer(request, reply, 200, listBody))
  app.post('/v1/pets', (request, reply) => answer(request, reply, 201, createdBody))
  await app.ready()
  return app.server
}

server.keepAliveTimeout = 60_000
server.listen(port, '127.0.0.1', () => {
  const address = server.address()
  const actual = typeof address === 'object' && address ? address.port : port
  process.stdout.write(`listening ${actual}\n`)
})
process.once('SIGTERM', () => server.close(() => process.exit(0)))
