// Checks a response against the OpenAPI document the app serves: its status is documented for the
// operation (or falls under `default`), its body matches the schema, every header the document
// marks `required` is there, every documented header it carries matches its schema, and it
// carries no header the document does not declare beyond HTTP's own.
import assert from 'node:assert/strict'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'

type Json = Record<string, unknown>

interface Operation {
  path: string
  template: RegExp
  method: string
  responses: Record<string, Json>
}

/** Fields of HTTP itself (RFC 9110, 9111, 6797, Fetch's CORS), which the document does not list. */
const HTTP_FIELDS = new Set([
  'connection',
  'content-length',
  'content-type',
  'date',
  'keep-alive',
  'strict-transport-security',
  'transfer-encoding',
  'vary',
  'access-control-allow-credentials',
  'access-control-allow-headers',
  'access-control-allow-methods',
  'access-control-expose-headers',
  'access-control-max-age',
])

const lower = (o: Json): Record<string, Json> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k.toLowerCase(), v as Json]))

export class Conformance {
  private readonly ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
  private readonly operations: Operation[] = []
  private readonly compiled = new Map<string, ValidateFunction>()

  /** `doc` as JSON.parse gives it: int64 bounds round, which only widens them by one. */
  constructor(doc: Json, basePath = '/v1') {
    this.ajv.addSchema(doc, 'doc')
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Json>)) {
      const template = new RegExp(
        `^${basePath}${path.replace(/\{[^}]+\}/g, '[^/]+').replace(/\//g, '\\/')}$`,
      )
      for (const [method, op] of Object.entries(methods)) {
        const responses = (op as Json).responses as Record<string, Json>
        this.operations.push({ path, template, method: method.toUpperCase(), responses })
      }
    }
  }

  /** The validator of the schema at `pointer` in the document. */
  private schema(pointer: string): ValidateFunction {
    let validate = this.compiled.get(pointer)
    if (validate === undefined) {
      validate = this.ajv.getSchema(`doc#${pointer}`)
      assert.ok(validate, `no schema at ${pointer}`)
      this.compiled.set(pointer, validate)
    }
    return validate
  }

  /** Fails the test when the response to `method url` is not what the document says. */
  check(method: string, url: string, res: LightMyRequestResponse): void {
    const path = url.split('?')[0]!
    // A path that does not decode never reaches a route: the router itself answers it.
    if (!decodes(path)) return
    const op = this.operations.find((o) => o.method === method && o.template.test(path))
    if (op === undefined) return
    const where = `${method} ${url} → ${res.statusCode}`
    const status = String(res.statusCode) in op.responses ? String(res.statusCode) : 'default'
    const response = op.responses[status]
    assert.ok(response, `${where}: status not in the document`)
    const pointer = (...keys: string[]) =>
      `/paths/${[op.path, op.method.toLowerCase(), 'responses', status, ...keys]
        .map((k) => k.replace(/~/g, '~0').replace(/\//g, '~1'))
        .join('/')}`

    const content = response.content as Record<string, Json> | undefined
    if (content?.['application/json']) {
      assert.match(String(res.headers['content-type']), /^application\/json/, `${where}: type`)
      const validate = this.schema(pointer('content', 'application/json', 'schema'))
      assert.ok(
        validate(JSON.parse(res.body)),
        `${where}: body ${res.body} ${this.ajv.errorsText(validate.errors)}`,
      )
    }

    const documented = lower((response.headers ?? {}) as Json)
    for (const [name, header] of Object.entries(documented)) {
      const value = res.headers[name]
      if (value === undefined) {
        assert.ok(header.required !== true, `${where}: required header ${name} missing`)
        continue
      }
      assert.equal(typeof value, 'string', `${where}: ${name} sent once`)
      const schema = header.schema as Json
      const typed = schema.type === 'integer' && /^-?[0-9]+$/.test(String(value))
      const validate = this.schema(pointer('headers', headerKey(response, name), 'schema'))
      assert.ok(
        validate(typed ? Number(value) : value),
        `${where}: ${name}: ${value} ${this.ajv.errorsText(validate.errors)}`,
      )
    }
    for (const name of Object.keys(res.headers)) {
      assert.ok(
        HTTP_FIELDS.has(name) || name in documented,
        `${where}: header ${name} is not in the document`,
      )
    }
  }

  /** `inject` that checks every response it returns. */
  wrap(inject: (o: InjectOptions) => Promise<LightMyRequestResponse>) {
    return async (o: InjectOptions): Promise<LightMyRequestResponse> => {
      const res = await inject(o)
      this.check(String(o.method ?? 'GET').toUpperCase(), String(o.url ?? o.path ?? '/'), res)
      return res
    }
  }
}

function decodes(path: string): boolean {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

/** The document's own spelling of a header name. */
function headerKey(response: Json, lowerName: string): string {
  return Object.keys(response.headers as Json).find((k) => k.toLowerCase() === lowerName)!
}
