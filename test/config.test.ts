import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { ConfigError, configWith, loadConfig } from '../src/config.js'
import { storeIndependent } from './support/stores.js'
import { tempDir } from './support/workspace.js'

storeIndependent(() => {
  test('.env supplies settings; the real environment wins over it', (t) => {
    const path = join(tempDir(t), '.env')
    writeFileSync(
      path,
      [
        '# comments and blank lines are ignored',
        '',
        'PORT=9090',
        'export HOST=0.0.0.0',
        'PETSTORE_DATABASE_URL="sqlite:/srv/pets.db"',
        "PETSTORE_LOG_LEVEL='warn'",
      ].join('\n'),
    )
    const config = loadConfig({ PORT: '7070' }, path)
    assert.equal(config.port, 7070)
    assert.equal(config.host, '0.0.0.0')
    assert.equal(config.databaseUrl, 'sqlite:/srv/pets.db')
    assert.equal(config.logLevel, 'warn')
  })

  test('defaults apply when nothing is set, and a missing .env is fine', (t) => {
    const config = loadConfig({}, join(tempDir(t), 'absent.env'))
    assert.equal(config.port, 8080)
    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.databaseUrl, 'sqlite:./data/petstore.db')
    assert.deepEqual(config.apiKeys, [])
    assert.equal(config.now, null)
    assert.equal(config.rateLimitMax, 6000)
    assert.equal(config.rateLimitWindowMs, 60_000)
  })

  test('every bad value is reported at once, naming the variable and what it accepts', () => {
    assert.throws(
      () =>
        loadConfig(
          { PORT: 'abc', PETSTORE_RATE_LIMIT_WINDOW: '10 minutes', PETSTORE_NOW: 'tomorrow' },
          null,
        ),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.deepEqual(err.problems, [
          'PORT="abc" is invalid: expected an integer from 0 to 65535',
          'PETSTORE_NOW="tomorrow" is invalid: expected an ISO 8601 instant with a zone, e.g. `2030-12-05T00:00:00Z`',
          'PETSTORE_RATE_LIMIT_WINDOW="10 minutes" is invalid: expected a duration such as `60s`, `1m`, `1h`',
        ])
        return true
      },
    )
  })

  test('a deprecation instant after the sunset is refused', () => {
    assert.throws(
      () => loadConfig({ PETSTORE_GETPET_DEPRECATED_AT: '2031-01-01T00:00:00Z' }, null),
      {
        message:
          'invalid configuration:\n  PETSTORE_GETPET_DEPRECATED_AT must not be after the sunset 2030-12-05T00:00:00.000Z',
      },
    )
  })

  test("the document's contact and licence: absent by default, checked when set", () => {
    const defaults = loadConfig({}, null)
    for (const key of [
      'openapiContactName',
      'openapiContactUrl',
      'openapiContactEmail',
      'openapiLicenseName',
      'openapiLicenseUrl',
    ] as const) {
      assert.equal(defaults[key], null, key)
    }
    const set = loadConfig(
      {
        PETSTORE_OPENAPI_CONTACT_NAME: 'API team',
        PETSTORE_OPENAPI_CONTACT_URL: 'https://petstore.dev/support',
        PETSTORE_OPENAPI_CONTACT_EMAIL: 'api@petstore.dev',
        PETSTORE_OPENAPI_LICENSE_NAME: 'Apache-2.0',
        PETSTORE_OPENAPI_LICENSE_URL: 'https://www.apache.org/licenses/LICENSE-2.0',
      },
      null,
    )
    assert.equal(set.openapiContactEmail, 'api@petstore.dev')
    assert.equal(set.openapiLicenseUrl, 'https://www.apache.org/licenses/LICENSE-2.0')
    assert.throws(
      () =>
        loadConfig(
          {
            PETSTORE_OPENAPI_CONTACT_URL: 'ftp://petstore.dev',
            PETSTORE_OPENAPI_CONTACT_EMAIL: 'api team <api@petstore.dev>',
          },
          null,
        ),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.deepEqual(err.problems, [
          'PETSTORE_OPENAPI_CONTACT_URL="ftp://petstore.dev" is invalid: expected an http(s) URL',
          'PETSTORE_OPENAPI_CONTACT_EMAIL="api team <api@petstore.dev>" is invalid: expected an email address',
        ])
        return true
      },
    )
    assert.throws(
      () => loadConfig({ PETSTORE_OPENAPI_LICENSE_URL: 'https://petstore.dev/licence' }, null),
      {
        message:
          'invalid configuration:\n  PETSTORE_OPENAPI_LICENSE_URL needs PETSTORE_OPENAPI_LICENSE_NAME',
      },
    )
  })

  test('a PETSTORE_ variable that is no setting stops the start, named with the setting it is closest to', (t) => {
    const path = join(tempDir(t), '.env')
    writeFileSync(path, 'PETSTORE_LOG_LEVL=debug\n')
    assert.throws(
      () =>
        loadConfig(
          {
            PETSTORE_DATABSE_URL: 'sqlite:/srv/pets.db',
            PETSTORE_FAVOURITE_PET: 'cat',
            PETSTORE_PORT: '8080',
            PETSTORE_RATE_LIMIT_MAX: '10',
            PATH: '/usr/bin',
          },
          path,
        ),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.deepEqual(err.problems, [
          'PETSTORE_DATABSE_URL is not a setting; did you mean PETSTORE_DATABASE_URL? (petstore serve --help lists them)',
          'PETSTORE_FAVOURITE_PET is not a setting (petstore serve --help lists them)',
          'PETSTORE_LOG_LEVL is not a setting; did you mean PETSTORE_LOG_LEVEL? (petstore serve --help lists them)',
          'PETSTORE_PORT is not a setting (petstore serve --help lists them)',
        ])
        return true
      },
    )
  })

  test("Kubernetes' service links of Services named petstore and petstore-metrics are no settings", () => {
    const links = {
      PETSTORE_SERVICE_HOST: '10.0.0.11',
      PETSTORE_SERVICE_PORT: '8080',
      PETSTORE_SERVICE_PORT_HTTP: '8080',
      PETSTORE_PORT: 'tcp://10.0.0.11:8080',
      PETSTORE_PORT_8080_TCP: 'tcp://10.0.0.11:8080',
      PETSTORE_PORT_8080_TCP_PROTO: 'tcp',
      PETSTORE_PORT_8080_TCP_PORT: '8080',
      PETSTORE_PORT_8080_TCP_ADDR: '10.0.0.11',
      PETSTORE_METRICS_SERVICE_HOST: '10.0.0.12',
      PETSTORE_METRICS_SERVICE_PORT: '9464',
      PETSTORE_METRICS_PORT: 'tcp://10.0.0.12:9464',
      PETSTORE_METRICS_PORT_9464_TCP: 'tcp://10.0.0.12:9464',
      PETSTORE_METRICS_PORT_9464_TCP_ADDR: '10.0.0.12',
    }
    const config = loadConfig({ ...links, PETSTORE_RATE_LIMIT_MAX: '10' }, null)
    assert.equal(config.rateLimitMax, 10)
    // The metrics port keeps its default: a link's address is not the operator's setting.
    assert.equal(config.metricsPort, configWith().metricsPort)
    // Set in the pod's own env, the setting wins over the link, and is read as any setting.
    assert.equal(loadConfig({ ...links, PETSTORE_METRICS_PORT: '9100' }, null).metricsPort, 9100)
    assert.throws(() => loadConfig({ PETSTORE_METRICS_PORT: 'tcp://10.0.0.12' }, null), {
      message:
        'invalid configuration:\n  PETSTORE_METRICS_PORT="tcp://10.0.0.12" is invalid: expected an integer from 0 to 65535, or `off`',
    })
  })

  test('an unknown name is reported with the bad values, after them', () => {
    assert.throws(() => loadConfig({ PORT: 'abc', PETSTORE_LOG_LEVL: 'debug' }, null), {
      message:
        'invalid configuration:\n  PORT="abc" is invalid: expected an integer from 0 to 65535\n  PETSTORE_LOG_LEVL is not a setting; did you mean PETSTORE_LOG_LEVEL? (petstore serve --help lists them)',
    })
  })

  test('the names left to the launcher, the client example, compose.yaml, tests and benchmarks are not refused', (t) => {
    const path = join(tempDir(t), '.env')
    writeFileSync(path, 'PETSTORE_IMAGE=localhost/petstore:latest\nPETSTORE_HTTP_PORT=8081\n')
    const config = loadConfig(
      {
        PETSTORE_COMPILE_CACHE: '/tmp/cache',
        PETSTORE_URL: 'http://127.0.0.1:8080/v1',
        PETSTORE_KEY: 'pet_0123456789ab_secret',
        PETSTORE_TEST_STORE: 'postgres',
        PETSTORE_TEST_POSTGRES_URL: 'postgres://postgres@127.0.0.1:5432/test',
        PETSTORE_BENCH_POSTGRES_URL: 'postgres://postgres@127.0.0.1:5432/test',
        PETSTORE_RATE_LIMIT_MAX: '10',
      },
      path,
    )
    assert.equal(config.rateLimitMax, 10)
  })
})
