import { LruMap } from 'toad-cache';
/** Counters kept at most; the least recently used one goes first (as @fastify/rate-limit's). */
const MAX_COUNTERS = 100_000;
/**
 * Fixed windows in memory, with @fastify/rate-limit's in-memory semantics (a window opens at a
 * key's first request and lasts windowMs), counted synchronously: going through the plugin's
 * limiter, with its promises and route lookups, cost ~8 µs of every request (bench/README).
 */
export function memoryCounter(limit, keyOf) {
    const windows = new LruMap(MAX_COUNTERS);
    return (request) => {
        const key = keyOf(request);
        const now = Date.now();
        let w = windows.get(key);
        if (w === undefined || w.startMs + limit.windowMs <= now) {
            w = { count: 0, startMs: now };
            windows.set(key, w);
        }
        w.count++;
        return {
            max: limit.max,
            remaining: Math.max(0, limit.max - w.count),
            ttlInSeconds: Math.ceil((limit.windowMs - (now - w.startMs)) / 1000),
            isExceeded: w.count > limit.max,
        };
    };
}
/**
 * Windows in Redis, one budget for every process that shares it, through @fastify/rate-limit
 * (its Lua script makes count-and-expire atomic). The plugin must be registered on `app`.
 */
export function pluginCounter(app, limit, keyOf) {
    const limiter = app.createRateLimit({
        max: limit.max,
        timeWindow: limit.windowMs,
        keyGenerator: keyOf,
    });
    return (request) => limiter(request);
}
//# sourceMappingURL=rate-counters.js.map