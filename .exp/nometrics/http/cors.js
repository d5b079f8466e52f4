// CORS for the operator's list of browser origins; with an empty list nothing is registered at all.
import cors from '@fastify/cors';
/** Response headers a browser script may read: every one the contract gives meaning to. */
export const EXPOSED_HEADERS = [
    'Link',
    'Location',
    'Deprecation',
    'Sunset',
    'RateLimit',
    'RateLimit-Policy',
    'Retry-After',
    'X-Request-Id',
    'Idempotent-Replayed',
];
export const ALLOWED_METHODS = ['GET', 'POST', 'HEAD'];
export const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'];
/** Seconds a browser may reuse a preflight answer; Chromium caps it at two hours. */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;
const allowed = {
    methods: ALLOWED_METHODS,
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    // Keys travel in the Authorization header, never in cookies: no credentials mode.
    credentials: false,
};
/**
 * Must be registered before authentication: its onRequest hook answers preflights (which carry
 * no key) and puts the CORS headers on every later response, error bodies included.
 */
export async function registerCors(app, origins) {
    if (origins.length === 0)
        return;
    const known = new Set(origins);
    await app.register(cors, {
        hook: 'onRequest',
        delegator: (request, callback) => {
            const origin = request.headers.origin;
            // Other origins get no Access-Control-* header at all, as if CORS were off.
            if (origin === undefined || !known.has(origin)) {
                callback(null, { origin: false });
                return;
            }
            // An OPTIONS without Access-Control-Request-Method is no preflight: it is routed like any
            // other request (401 without a key, then 405), with the CORS headers so a script can read it.
            const preflight = request.method === 'OPTIONS' &&
                request.headers['access-control-request-method'] !== undefined;
            callback(null, { ...allowed, origin, preflight });
        },
    });
}
//# sourceMappingURL=cors.js.map