// What this service adds to Fastify's request and route config.
import type { AuthenticatedKey } from '../auth/api-keys.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key that authenticated this request; null on public routes and before auth. */
    apiKey: AuthenticatedKey | null
  }
  interface FastifyContextConfig {
    /** Reachable without an API key. */
    public?: boolean
    /** The operation's name, for logs. */
    operation?: string
    /** Every response carries the deprecation headers (Deprecation, Sunset, successor Link). */
    deprecated?: boolean
  }
}
