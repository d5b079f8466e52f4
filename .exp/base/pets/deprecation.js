import { GETPET_SUNSET } from '../config.js';
/** RFC 9745 `Deprecation: @<epoch-seconds>`, RFC 8594 `Sunset`, and the successor link. */
export function deprecationHeaders(deprecatedAt) {
    return {
        deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
        sunset: GETPET_SUNSET.toUTCString(),
        link: '</v1/pets>; rel="successor-version"',
    };
}
export function isSunset(now) {
    return now.getTime() >= GETPET_SUNSET.getTime();
}
/**
 * Counts calls to the deprecated operation per API key and logs each with the running count;
 * `onCall` hears of each call too (the metrics' count by key name).
 */
export class DeprecatedCallCounter {
    onCall;
    counts = new Map();
    constructor(onCall) {
        this.onCall = onCall;
    }
    record(log, operation, key) {
        const n = (this.counts.get(key.id) ?? 0) + 1;
        this.counts.set(key.id, n);
        log.warn({ deprecatedOperation: operation, apiKeyId: key.id, apiKeyName: key.name, callsByKey: n }, 'deprecated operation called');
        this.onCall?.(operation, key.name);
        return n;
    }
    snapshot() {
        return this.counts;
    }
}
//# sourceMappingURL=deprecation.js.map