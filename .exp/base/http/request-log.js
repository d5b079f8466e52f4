// One log line per request, with what an operator asks of it: which operation, which key's
// owner, what status, how long. Headers are never logged, so no key can leak through a log.
import { LogController } from 'fastify';
export class RequestLogController extends LogController {
    constructor() {
        super({ requestIdLogLabel: 'requestId' });
    }
    incomingRequest() { }
    requestCompleted(error, request, reply) {
        const line = {
            // The same name the metrics use: `unknown` when no route matched.
            operation: request.routeOptions.config.operation ?? 'unknown',
            method: request.method,
            url: request.url,
            status: reply.statusCode,
            durationMs: Math.round(reply.elapsedTime * 100) / 100,
            apiKeyName: request.apiKey?.name,
            remoteAddress: request.ip,
        };
        if (error)
            reply.log.error({ ...line, err: error }, 'request errored');
        else
            reply.log.info(line, 'request completed');
    }
}
//# sourceMappingURL=request-log.js.map