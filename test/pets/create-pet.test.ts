import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createPet, json, testApp } from '../support/app.js'
import { assertAnswered, errorBody } from '../support/errors.js'

const badRequest = (message: string) => ({ code: 'invalid_request', message, status: 400 })

describe('createPet', () => {
  test('201 with the pet, its Location and the standard headers', async (t) => {
    const a = await testApp(t)
    const res = await createPet(a, { name: 'Rex', categoryId: 3, status: 'available' })
    assert.equal(res.statusCode, 201)
    assert.equal(res.body, '{"id":1,"name":"Rex","categoryId":3,"status":"available"}')
    assert.equal(res.headers.location, '/v1/pets/1')
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    assert.equal(res.headers['idempotent-replayed'], undefined)
  })

  test('a pet created without a status is returned and stored without one', async (t) => {
    const a = await testApp(t)
    const res = await createPet(a, { name: 'Tom', categoryId: 1 })
    assert.equal(res.statusCode, 201)
    assert.equal(res.body, '{"id":1,"name":"Tom","categoryId":1}')
    const got = await a.call({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(got.body, '{"id":1,"name":"Tom","categoryId":1}')
  })

  test('int64 categoryId keeps every digit, in the raw response text', async (t) => {
    const a = await testApp(t)
    const values = ['9223372036854775807', '-9223372036854775808', '9007199254740993', '0', '-1']
    for (const [i, v] of values.entries()) {
      const res = await createPet(a, `{"name":"n${i}","categoryId":${v}}`)
      assert.equal(res.statusCode, 201)
      assert.equal(res.body, `{"id":${i + 1},"name":"n${i}","categoryId":${v}}`)
      const got = await a.call({ method: 'GET', url: `/v1/pets/${i + 1}` })
      assert.equal(got.body, `{"id":${i + 1},"name":"n${i}","categoryId":${v}}`)
    }
    const list = await a.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(
      list.body,
      `[${values.map((v, i) => `{"id":${i + 1},"name":"n${i}","categoryId":${v}}`).join(',')}]`,
    )
  })

  test('categoryId outside int64 is 400', async (t) => {
    const a = await testApp(t)
    for (const v of ['9223372036854775808', '-9223372036854775809', '99999999999999999999999']) {
      const res = await createPet(a, `{"name":"x","categoryId":${v}}`)
      assert.equal(res.statusCode, 400, v)
      assert.deepEqual(json(res), badRequest("field 'categoryId' must be a 64-bit integer"))
    }
  })

  test('no coercion: integers must be integer literals, strings must be strings', async (t) => {
    const a = await testApp(t)
    const cases: [string, string][] = [
      ['{"name":"x","categoryId":"7"}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"x","categoryId":1.0}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"x","categoryId":1e2}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"x","categoryId":-0.0}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"x","categoryId":1.5}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"x","categoryId":true}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"x","categoryId":null}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":true,"categoryId":1}', "field 'name' must be a string"],
      ['{"name":5,"categoryId":1}', "field 'name' must be a string"],
      ['{"name":"x","categoryId":1,"status":null}', "field 'status' must be a string"],
      [
        '{"name":"x","categoryId":1,"status":"lost"}',
        "field 'status' must be one of: available, pending, sold",
      ],
      [
        '{"name":"x","categoryId":1,"status":"Available"}',
        "field 'status' must be one of: available, pending, sold",
      ],
    ]
    for (const [body, message] of cases) {
      const res = await createPet(a, body)
      assert.equal(res.statusCode, 400, body)
      assert.deepEqual(json(res), badRequest(message), body)
    }
    assert.equal((await a.store.listPets({ afterId: null, status: null, limit: 10 })).length, 0)
  })

  test('required fields, id and unknown fields', async (t) => {
    const a = await testApp(t)
    const cases: [string, string][] = [
      ['{"categoryId":1}', "missing required field 'name'"],
      ['{"name":"x"}', "missing required field 'categoryId'"],
      [
        '{"id":5,"name":"x","categoryId":1}',
        "field 'id' must not be sent: the service assigns ids",
      ],
      ['{"name":"x","categoryId":1,"color":"red"}', "unknown field 'color'"],
      ['[]', 'request body must be a JSON object'],
      ['"pet"', 'request body must be a JSON object'],
      ['null', 'request body must be a JSON object'],
    ]
    for (const [body, message] of cases) {
      const res = await createPet(a, body)
      assert.equal(res.statusCode, 400, body)
      assert.deepEqual(json(res), badRequest(message), body)
    }
  })

  test('name: 1 to 255 code points, not only Unicode white space, no U+0000', async (t) => {
    const a = await testApp(t)
    const tooLong = badRequest("field 'name' must be 1 to 255 characters long")
    const blank = badRequest("field 'name' must contain a character that is not white space")
    assert.deepEqual(json(await createPet(a, { name: '', categoryId: 1 })), tooLong)
    assert.deepEqual(json(await createPet(a, { name: 'a'.repeat(256), categoryId: 1 })), tooLong)
    for (const ws of [' ', '\t\n', '\u00a0', '\u2003\u3000', '\u0085', '\u2028']) {
      assert.deepEqual(json(await createPet(a, { name: ws, categoryId: 1 })), blank, ws)
    }
    assert.deepEqual(
      json(await createPet(a, { name: 'a\u0000b', categoryId: 1 })),
      badRequest("field 'name' must not contain the character U+0000"),
    )
    // 255 astral characters are 510 UTF-16 units but 255 code points: allowed.
    const astral = '🐈'.repeat(255)
    const res = await createPet(a, { name: astral, categoryId: 1 })
    assert.equal(res.statusCode, 201)
    assert.deepEqual(json(res), { id: 1, name: astral, categoryId: 1 })
    assert.equal((await createPet(a, { name: 'a'.repeat(255), categoryId: 1 })).statusCode, 201)
    assert.equal((await createPet(a, { name: ' x ', categoryId: 1 })).statusCode, 201)
  })

  test('malformed, empty, missing and non-UTF-8 bodies are 400', async (t) => {
    const a = await testApp(t)
    const post = (payload: string | Buffer | undefined, contentType = 'application/json') =>
      a.call({
        method: 'POST',
        url: '/v1/pets',
        headers: contentType ? { 'content-type': contentType } : {},
        ...(payload === undefined ? {} : { payload }),
      })
    const malformed = await post('{"name":"x",')
    assert.equal(malformed.statusCode, 400)
    const body = json(malformed) as { code: string; message: string; status: number }
    assert.equal(body.code, 'invalid_request')
    assert.equal(body.status, 400)
    assert.match(body.message, /^request body is not valid JSON: /)
    assert.deepEqual(json(await post('')), badRequest('request body is empty'))
    assert.deepEqual(
      json(await post(Buffer.from([0x7b, 0x22, 0x6e, 0xff, 0x22, 0x3a, 0x31, 0x7d]))),
      badRequest('request body is not valid UTF-8'),
    )
    assert.deepEqual(
      json(await post('{"name":"\\ud800","categoryId":1}')),
      badRequest('request body contains a lone UTF-16 surrogate escape'),
    )
    assert.deepEqual(
      json(await post('{"name":"a","name":"b","categoryId":1}')),
      badRequest("request body is not valid JSON: Duplicate key 'name' encountered at position 13"),
    )
    const missing = await a.call({ method: 'POST', url: '/v1/pets' })
    assert.equal(missing.statusCode, 400)
    assert.deepEqual(json(missing), badRequest('request body must be a JSON object'))
    assert.equal((await a.store.listPets({ afterId: null, status: null, limit: 10 })).length, 0)
  })

  test('content types: JSON with a UTF-8 charset is accepted, anything else is 415', async (t) => {
    const a = await testApp(t)
    const body = '{"name":"x","categoryId":1}'
    const post = (contentType: string) =>
      a.call({
        method: 'POST',
        url: '/v1/pets',
        headers: { 'content-type': contentType },
        payload: body,
      })
    assert.equal((await post('application/json; charset=utf-8')).statusCode, 201)
    assert.equal((await post('Application/JSON')).statusCode, 201)
    const unsupported = (message: string) => ({
      code: 'unsupported_media_type',
      message,
      status: 415,
    })
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await post(ct)
      assert.equal(res.statusCode, 415, ct)
      assert.deepEqual(json(res), unsupported('request body must be application/json'), ct)
    }
    const latin1 = await post('application/json; charset=iso-8859-1')
    assert.equal(latin1.statusCode, 415)
    assert.deepEqual(json(latin1), unsupported('request body must be UTF-8 application/json'))
    assert.equal((await a.store.listPets({ afterId: null, status: null, limit: 10 })).length, 2)
  })

  test('a body over 64 KiB is 413 and creates nothing', async (t) => {
    const a = await testApp(t)
    const res = await createPet(a, { name: 'x', categoryId: 1, pad: 'y'.repeat(70_000) })
    assertAnswered(
      res,
      errorBody(413, 'payload_too_large', 'request body is larger than 65536 bytes'),
    )
    assert.equal((await a.store.listPets({ afterId: null, status: null, limit: 10 })).length, 0)
  })

  test('ids are assigned in ascending order and never reused', async (t) => {
    const a = await testApp(t)
    const ids: number[] = []
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => createPet(a, { name: `p${i}`, categoryId: i })),
    )
    for (const r of results) {
      assert.equal(r.statusCode, 201)
      ids.push((json(r) as { id: number }).id)
    }
    assert.deepEqual(
      [...ids].sort((x, y) => x - y),
      Array.from({ length: 50 }, (_, i) => i + 1),
    )
  })
})
