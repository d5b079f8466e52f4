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

/**
 * A create whose Idempotency-Key claim was released, or taken over, before its commit: nothing was
 * added. Its request was already answered (the release follows a failure); a retry claims anew.
 */
export class ClaimReleasedError extends StorageUnavailableError {
  constructor() {
    super('the create was abandoned before its commit; retry with the same Idempotency-Key')
    this.name = 'ClaimReleasedError'
  }
}

/**
 * The database's path cannot hold a store: its folder cannot be made, or the file is no SQLite
 * database. A mistake in the settings, not a passing fault: the caller names the setting.
 */
export class DatabasePathError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'DatabasePathError'
  }
}
