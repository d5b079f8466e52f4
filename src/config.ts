// The only module that reads process.env: every setting is parsed and checked here, once, at start.
import { resolve } from 'node:path'
import { readDotEnv } from './dot-env.js'
import { GETPET_SUNSET } from './pets/deprecation.js'
import { isServiceLink, unknownSettingProblems } from './setting-names.js'
import {
  apiKeyList,
  baseUrl,
  boolean,
  databaseUrl,
  duration,
  durationBetween,
  emailAddress,
  httpUrl,
  instant,
  integer,
  logFormat,
  logLevel,
  logLevels,
  MAX_PROXY_HOPS,
  optionalPort,
  originList,
  orNull,
  type Parser,
  path,
  rateLimitStore,
  redisUrl,
  text,
  trustProxy,
} from './setting-parsers.js'
import { DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY } from './storage/idempotency-cap.js'

export { duration } from './setting-parsers.js'

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`)
    this.name = 'ConfigError'
  }
}

interface Setting {
  key: string
  env: string
  default: string
  accepts: string
  description: string
  parse: Parser<unknown>
}

export const settings = [
  {
    key: 'port',
    env: 'PORT',
    default: '8080',
    accepts: 'an integer from 0 to 65535',
    description: 'TCP port of the API.',
    parse: integer(0, 65535),
  },
  {
    key: 'host',
    env: 'HOST',
    default: '127.0.0.1',
    accepts: 'a host name or IP address',
    description: 'Address the API listens on (`0.0.0.0` for every interface).',
    parse: text,
  },
  {
    key: 'workers',
    env: 'PETSTORE_WORKERS',
    default: '1',
    accepts: 'an integer from 1 to 64',
    description:
      'Worker processes of `petstore serve`, all on the one port (`--workers` overrides it); 1 serves from a single process.',
    parse: integer(1, 64),
  },
  {
    key: 'databaseUrl',
    env: 'PETSTORE_DATABASE_URL',
    default: 'sqlite:./data/petstore.db',
    accepts: '`sqlite:<path>` or `postgres://user@host:port/database`',
    description:
      'Where the catalogue is stored. A SQLite file and its folder are created on first start; a PostgreSQL database must exist (tables are created by migrations).',
    parse: databaseUrl,
  },
  {
    key: 'databasePoolSize',
    env: 'PETSTORE_DATABASE_POOL_SIZE',
    default: '10',
    accepts: 'an integer from 1 to 1000',
    description: 'PostgreSQL connections per process.',
    parse: integer(1, 1000),
  },
  {
    key: 'databaseTimeoutMs',
    env: 'PETSTORE_DATABASE_TIMEOUT',
    default: '5s',
    accepts: 'a duration such as `5s` or `500ms`',
    description:
      "PostgreSQL: how long a request may wait for the database, all its waits together (the data version, a connection, each statement, its create's commit); past it the request answers 503.",
    parse: duration,
  },
  {
    key: 'rateLimitStore',
    env: 'PETSTORE_RATE_LIMIT_STORE',
    default: 'memory',
    accepts: '`memory` or `redis`',
    description:
      'Where rate-limit counters live: `memory` is per process; `redis` is one budget shared by every instance and worker.',
    parse: rateLimitStore,
  },
  {
    key: 'redisUrl',
    env: 'PETSTORE_REDIS_URL',
    default: 'redis://127.0.0.1:6379',
    accepts: 'a `redis://` URL',
    description: 'Redis for shared rate limits (used when PETSTORE_RATE_LIMIT_STORE=redis).',
    parse: redisUrl,
  },
  {
    key: 'apiKeys',
    env: 'PETSTORE_API_KEYS',
    default: '',
    accepts: 'comma-separated keys of 16 to 512 visible ASCII characters',
    description: 'Keys accepted besides the stored ones. When set, no bootstrap key is created.',
    parse: apiKeyList,
  },
  {
    key: 'bootstrapKeyFile',
    env: 'PETSTORE_BOOTSTRAP_KEY_FILE',
    default: '',
    accepts: 'a file path; the file must not exist yet',
    description:
      'Where the first start writes the bootstrap key when stdout is not a terminal (mode 0600); unset: `bootstrap-key` beside the SQLite file, or in the working directory on PostgreSQL.',
    parse: orNull(path),
  },
  {
    key: 'now',
    env: 'PETSTORE_NOW',
    default: '',
    accepts: 'an ISO 8601 instant with a zone, e.g. `2030-12-05T00:00:00Z`',
    description: 'Testing aid: the clock starts at this instant and runs on from there.',
    parse: orNull(instant),
  },
  {
    key: 'logLevel',
    env: 'PETSTORE_LOG_LEVEL',
    default: 'info',
    accepts: logLevels.join(', '),
    description: 'Least severe level that is logged.',
    parse: logLevel,
  },
  {
    key: 'productionUrl',
    env: 'PETSTORE_PRODUCTION_URL',
    default: 'https://petstore.example.com/v1',
    accepts: 'an http(s) URL ending in /v1',
    description: 'Production base address, the first `servers` entry of the OpenAPI document.',
    parse: baseUrl,
  },
  {
    key: 'stagingUrl',
    env: 'PETSTORE_STAGING_URL',
    default: 'https://staging.petstore.example.com/v1',
    accepts: 'an http(s) URL ending in /v1',
    description: 'Staging base address, the second `servers` entry of the OpenAPI document.',
    parse: baseUrl,
  },
  {
    key: 'openapiContactName',
    env: 'PETSTORE_OPENAPI_CONTACT_NAME',
    default: '',
    accepts: 'any text',
    description:
      'Who answers for the API: `info.contact.name` of the OpenAPI document; unset leaves it out.',
    parse: orNull(text),
  },
  {
    key: 'openapiContactUrl',
    env: 'PETSTORE_OPENAPI_CONTACT_URL',
    default: '',
    accepts: 'an http(s) URL',
    description: "The API's contact page: `info.contact.url` of the OpenAPI document.",
    parse: orNull(httpUrl),
  },
  {
    key: 'openapiContactEmail',
    env: 'PETSTORE_OPENAPI_CONTACT_EMAIL',
    default: '',
    accepts: 'an email address',
    description: "The API's contact address: `info.contact.email` of the OpenAPI document.",
    parse: orNull(emailAddress),
  },
  {
    key: 'openapiLicenseName',
    env: 'PETSTORE_OPENAPI_LICENSE_NAME',
    default: '',
    accepts: 'any text, e.g. `Apache-2.0`',
    description:
      'The licence the API is offered under: `info.license.name` of the OpenAPI document; unset leaves `info.license` out.',
    parse: orNull(text),
  },
  {
    key: 'openapiLicenseUrl',
    env: 'PETSTORE_OPENAPI_LICENSE_URL',
    default: '',
    accepts: 'an http(s) URL, together with PETSTORE_OPENAPI_LICENSE_NAME',
    description: "The licence's text: `info.license.url` of the OpenAPI document.",
    parse: orNull(httpUrl),
  },
  {
    key: 'deprecatedAt',
    env: 'PETSTORE_GETPET_DEPRECATED_AT',
    default: '2025-12-05T00:00:00Z',
    accepts: 'an ISO 8601 instant with a zone, not after the sunset',
    description: 'When `getPet` became deprecated; sent as `Deprecation: @<epoch-seconds>`.',
    parse: instant,
  },
  {
    key: 'deprecatedCallLogIntervalMs',
    env: 'PETSTORE_DEPRECATED_CALL_LOG_INTERVAL',
    default: '1m',
    accepts: 'a duration such as `1m`, `10s` or `0s`',
    description:
      "Least time between two `deprecated operation called` warnings for one API key: a key's first `getPet` call is logged at once, later ones at most once per interval with the running count. `0s` logs every call.",
    parse: duration,
  },
  {
    key: 'rateLimitMax',
    env: 'PETSTORE_RATE_LIMIT_MAX',
    default: '6000',
    accepts: 'an integer from 1 to 100000000',
    description: 'Requests one API key may make per window.',
    parse: integer(1, 100_000_000),
  },
  {
    key: 'rateLimitWindowMs',
    env: 'PETSTORE_RATE_LIMIT_WINDOW',
    default: '60s',
    accepts: 'a duration such as `60s`, `1m`, `1h`',
    description: 'Length of the per-key rate-limit window.',
    parse: duration,
  },
  {
    key: 'authFailureLimitMax',
    env: 'PETSTORE_AUTH_FAILURE_LIMIT_MAX',
    default: '30',
    accepts: 'an integer from 1 to 100000000',
    description:
      'Failed authentications one client network (an IPv4 address, an IPv6 /64) may make per window before it gets 429.',
    parse: integer(1, 100_000_000),
  },
  {
    key: 'authFailureWindowMs',
    env: 'PETSTORE_AUTH_FAILURE_WINDOW',
    default: '60s',
    accepts: 'a duration such as `60s`, `1m`, `1h`',
    description: 'Length of the failed-authentication window.',
    parse: duration,
  },
  {
    key: 'idempotencyKeysPerApiKey',
    env: 'PETSTORE_IDEMPOTENCY_KEYS_PER_API_KEY',
    default: String(DEFAULT_IDEMPOTENCY_KEYS_PER_API_KEY),
    accepts: 'an integer from 1 to 100000000',
    description:
      'Idempotency records kept per API key: past it, its oldest completed ones are dropped before their 24 hours (docs/api-behaviour.md).',
    parse: integer(1, 100_000_000),
  },
  {
    key: 'trustProxy',
    env: 'PETSTORE_TRUST_PROXY',
    default: 'false',
    accepts: `\`false\`, a number of proxy hops from 1 to ${MAX_PROXY_HOPS}, comma-separated proxy addresses or CIDRs (or \`loopback\`, \`linklocal\`, \`uniquelocal\`), or \`true\``,
    description:
      'Which peers are proxies whose `X-Forwarded-For`, `-Proto` and `-Host` are read: the client address (failed-authentication limit, logs), protocol and host (`Link`) come from the last hop reached, walking from the right while hops are trusted. `true` trusts every peer, so behind a proxy that appends to `X-Forwarded-For` a client chooses its own address.',
    parse: trustProxy,
  },
  {
    key: 'requestTimeoutMs',
    env: 'PETSTORE_REQUEST_TIMEOUT',
    default: '30s',
    accepts: 'a duration from `1s` to `10m`',
    description:
      'Longest time a request (headers and body) may take to arrive, past which the answer is `408` and the connection closes; and longest time an answer may go untaken by its client, past which its connection (HTTP/2: its stream) is cut.',
    parse: durationBetween(1000, 600_000),
  },
  {
    key: 'keepAliveTimeoutMs',
    env: 'PETSTORE_KEEP_ALIVE_TIMEOUT',
    default: '72s',
    accepts: 'a duration from `1s` to `10m`',
    description:
      'How long an idle connection (HTTP/1.1 keep-alive, or an HTTP/2 session with no open stream) stays open; keep it above the idle timeout of any proxy in front.',
    parse: durationBetween(1000, 600_000),
  },
  {
    key: 'shutdownTimeoutMs',
    env: 'PETSTORE_SHUTDOWN_TIMEOUT',
    default: '10s',
    accepts: 'a duration such as `10s`',
    description: 'How long SIGTERM waits for in-flight requests before closing anyway.',
    parse: duration,
  },
  {
    key: 'drainDelayMs',
    env: 'PETSTORE_DRAIN_DELAY',
    default: '5s',
    accepts: 'a duration such as `5s` or `0s`',
    description:
      'After SIGTERM, how long readiness answers 503 while requests are still served, so load balancers stop routing here before the listener closes.',
    parse: duration,
  },
  {
    key: 'tlsCertPath',
    env: 'PETSTORE_TLS_CERT',
    default: '',
    accepts: 'a file path (PEM), together with PETSTORE_TLS_KEY',
    description:
      'Certificate chain; with a key the API speaks HTTPS and sends `Strict-Transport-Security`.',
    parse: orNull(path),
  },
  {
    key: 'tlsKeyPath',
    env: 'PETSTORE_TLS_KEY',
    default: '',
    accepts: 'a file path (PEM), together with PETSTORE_TLS_CERT',
    description: 'Private key of the certificate.',
    parse: orNull(path),
  },
  {
    key: 'http2',
    env: 'PETSTORE_HTTP2',
    default: 'false',
    accepts: '`true` or `false` (needs TLS)',
    description: 'Offer HTTP/2 (with HTTP/1.1 fallback by ALPN).',
    parse: boolean,
  },
  {
    key: 'hstsMaxAgeSeconds',
    env: 'PETSTORE_HSTS_MAX_AGE',
    default: '31536000',
    accepts: 'an integer number of seconds from 0 to 63072000',
    description: '`max-age` of `Strict-Transport-Security`, sent only over TLS.',
    parse: integer(0, 63_072_000),
  },
  {
    key: 'corsOrigins',
    env: 'PETSTORE_CORS_ORIGINS',
    default: '',
    accepts: 'comma-separated origins such as `https://app.example.com`',
    description: 'Browser origins allowed to call the API; unset means CORS is off.',
    parse: originList,
  },
  {
    key: 'metricsPort',
    env: 'PETSTORE_METRICS_PORT',
    default: '9464',
    accepts: 'an integer from 0 to 65535, or `off`',
    description: 'Port of the Prometheus `GET /metrics` listener, separate from the API.',
    parse: optionalPort,
  },
  {
    key: 'metricsHost',
    env: 'PETSTORE_METRICS_HOST',
    default: '127.0.0.1',
    accepts: 'a host name or IP address',
    description: 'Address of the metrics listener: loopback unless you mean to expose it.',
    parse: text,
  },
  {
    key: 'logFormat',
    env: 'PETSTORE_LOG_FORMAT',
    default: 'auto',
    accepts: '`json`, `pretty` or `auto`',
    description:
      'Log lines as JSON, or readable; `auto` is readable on a terminal and JSON otherwise.',
    parse: logFormat,
  },
] as const satisfies readonly Setting[]

/** Every setting by its key, typed as its parser gives it. */
export type Config = {
  -readonly [S in (typeof settings)[number] as S['key']]: ReturnType<S['parse']>
}

/**
 * The variables settings are read from: .env's, with the real environment winning over it, less
 * Kubernetes' service links.
 */
function settingsSource(
  env: Record<string, string | undefined>,
  dotEnvPath: string | null,
): Record<string, string | undefined> {
  const source = { ...(dotEnvPath ? readDotEnv(resolve(dotEnvPath)) : {}), ...env }
  for (const [name, value] of Object.entries(source)) {
    if (isServiceLink(name, value)) delete source[name]
  }
  return source
}

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  dotEnvPath: string | null = '.env',
): Config {
  const source = settingsSource(env, dotEnvPath)
  const problems: string[] = []
  const config: Record<string, unknown> = {}
  for (const s of settings as readonly Setting[]) {
    const raw = source[s.env] ?? s.default
    try {
      config[s.key] = s.parse(raw)
    } catch {
      problems.push(`${s.env}=${JSON.stringify(raw)} is invalid: expected ${s.accepts}`)
    }
  }
  const result = config as unknown as Config
  if (problems.length === 0) problems.push(...crossProblems(result))
  const names: readonly string[] = settings.map((s) => s.env)
  problems.push(...unknownSettingProblems(source, names))
  if (problems.length > 0) throw new ConfigError(problems)
  return result
}

/** What is wrong between settings that are each valid: the first such problem, if any. */
function crossProblems(config: Config): string[] {
  if (config.deprecatedAt.getTime() > GETPET_SUNSET.getTime()) {
    return [
      `PETSTORE_GETPET_DEPRECATED_AT must not be after the sunset ${GETPET_SUNSET.toISOString()}`,
    ]
  }
  if ((config.tlsCertPath === null) !== (config.tlsKeyPath === null)) {
    return ['PETSTORE_TLS_CERT and PETSTORE_TLS_KEY must be set together']
  }
  if (config.http2 && config.tlsCertPath === null) {
    return ['PETSTORE_HTTP2=true needs PETSTORE_TLS_CERT and PETSTORE_TLS_KEY']
  }
  if (config.openapiLicenseUrl !== null && config.openapiLicenseName === null) {
    return ['PETSTORE_OPENAPI_LICENSE_URL needs PETSTORE_OPENAPI_LICENSE_NAME']
  }
  return []
}

/** Settings for tests and tools: the defaults with some overridden. */
export function configWith(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}, null), ...overrides }
}
