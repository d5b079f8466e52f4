// Request bodies are parsed here rather than by JSON.parse, which rounds integers beyond 2^53.
import { isInteger, parse } from 'lossless-json';
import { ApiError } from '../errors.js';
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
/**
 * JSON integer literals become BigInt, so every int64 keeps all of its digits; literals with a
 * fraction or exponent (`1.0`, `1e2`, `-0.0`) become numbers, which no integer field accepts.
 */
const parseNumber = (literal) => isInteger(literal) ? BigInt(literal) : Number(literal);
// With the u flag a well-formed surrogate pair is one code point; only a lone half matches.
const LONE_SURROGATE = /\p{Cs}/u;
/** `"\ud800"` is valid JSON but not valid Unicode: storing it would change the text. */
function rejectLoneSurrogates(key, value) {
    if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
        throw new ApiError('invalid_request', 'request body contains a lone UTF-16 surrogate escape');
    }
    return value;
}
export function parseJsonBody(body) {
    if (body.length === 0)
        throw new ApiError('invalid_request', 'request body is empty');
    let text;
    try {
        text = utf8.decode(body);
    }
    catch {
        throw new ApiError('invalid_request', 'request body is not valid UTF-8');
    }
    try {
        return parse(text, rejectLoneSurrogates, parseNumber);
    }
    catch (err) {
        if (err instanceof ApiError)
            throw err;
        const detail = err instanceof Error ? err.message : 'syntax error';
        throw new ApiError('invalid_request', `request body is not valid JSON: ${detail}`);
    }
}
/** Accepts `application/json`, optionally with `charset=utf-8`; another charset is refused. */
export function isAcceptedJsonCharset(contentType) {
    const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
    return m === null || m[1].toLowerCase() === 'utf-8' || m[1].toLowerCase() === 'utf8';
}
//# sourceMappingURL=json-body.js.map