// The fixed set of error codes (an enum in the OpenAPI document) and the error type that carries one.

export const errorStatus = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_key_in_progress: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  not_implemented: 501,
  service_unavailable: 503,
} as const

export type ErrorCode = keyof typeof errorStatus

export const errorCodes = Object.keys(errorStatus) as ErrorCode[]

export type ErrorBody = { code: ErrorCode; message: string; status: number }

/** An error the API reports to its caller as is: its message is safe to show. */
export class ApiError extends Error {
  readonly status: number

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'ApiError'
    this.status = errorStatus[code]
  }

  toBody(): ErrorBody {
    return errorBody(this.code, this.message)
  }
}

/** The code that goes with an HTTP status raised by a layer that knows only the status. */
export const codeForStatus = (status: number): ErrorCode =>
  errorCodes.find((c) => errorStatus[c] === status) ??
  (status >= 500 ? 'internal_error' : 'invalid_request')

/**
 * The one place an Error body is shaped. `status` differs from the code's only where the HTTP
 * parser answers a status no code stands for (408, 414, 431, all `invalid_request`).
 */
export const errorBody = (
  code: ErrorCode,
  message: string,
  status: number = errorStatus[code],
): ErrorBody => ({ code, message, status })
