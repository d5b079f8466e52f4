// What this service adds to Fastify's request and route config.
import type { AuthenticatedKey } from '../auth/api-keys.js'
import type { DataVersion, Deadline } from '../storage/store.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key that authenticated this request; null on public routes and before auth. */
    apiKey: AuthenticatedKey | null
    /**
     * The store's dataVersion read as the request began (undefined when the store has none):
     * results cached at this version are what the database holds for this request.
     */
    dataVersion: DataVersion | undefined
    /** By when the database must have answered (src/storage/deadline.ts), set with dataVersion. */
    deadline: Deadline
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
