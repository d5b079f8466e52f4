// What a store raises when the database cannot serve it right now; the HTTP layer alone turns it
// into a response (503 with Retry-After), so storage knows nothing of HTTP.

/** The database is unreachable, full, read-only or otherwise failing: retrying later may work. */
export class StorageUnavailableError extends Error {
  constructor(
    message: string,
    /** Seconds a client should wait before retrying. */
    readonly retryAfterSeconds = 1,
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = 'StorageUnavailableError'
  }
}
