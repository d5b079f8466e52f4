// The baseline of `npm run bench`: a bare node:http server, the least a Node process can do for
// the same requests. It checks `Authorization: Bearer <key>` as one fixed string, answers GET with
// a precomputed 20-pet JSON array and POST with 201 and a precomputed pet once the body is read, so
// its create costs what its list costs plus reading the body. Run as a child process, with the
// service's Node flags (NODE_FLAGS in service.ts): `node --no-memory-reducer
// --max-semi-space-size=8 --import tsx bench/baseline-server.ts <port> <key>`; prints
// `listening <port>` when ready.
import { createServer } from 'node:http'

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

const server = createServer((req, res) => {
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
})

server.keepAliveTimeout = 60_000
server.listen(port, '127.0.0.1', () => {
  const address = server.address()
  const actual = typeof address === 'object' && address ? address.port : port
  process.stdout.write(`listening ${actual}\n`)
})
process.once('SIGTERM', () => server.close(() => process.exit(0)))
