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
};
export const errorCodes = Object.keys(errorStatus);
/** An error the API reports to its caller as is: its message is safe to show. */
export class ApiError extends Error {
    code;
    headers;
    status;
    constructor(code, message, headers = {}) {
        super(message);
        this.code = code;
        this.headers = headers;
        this.name = 'ApiError';
        this.status = errorStatus[code];
    }
    toBody() {
        return { code: this.code, message: this.message, status: this.status };
    }
}
/** The code that goes with an HTTP status raised by a layer that knows only the status. */
export function codeForStatus(status) {
    const found = errorCodes.find((c) => errorStatus[c] === status);
    if (found)
        return found;
    if (status >= 500)
        return 'internal_error';
    return 'invalid_request';
}
export function errorBody(code, message) {
    return { code, message, status: errorStatus[code] };
}
//# sourceMappingURL=errors.js.map