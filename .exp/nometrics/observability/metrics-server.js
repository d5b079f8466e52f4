// The Prometheus endpoint, on a listener of its own: the API port never serves it, and it binds
// loopback unless the operator says otherwise, so figures about keys and traffic stay private.
import { createServer } from 'node:http';
import { errorBody } from '../errors.js';
/** The API's Error body, so a wrong address gets the same shape of answer as anywhere else. */
function sendError(res, code, message, headers = {}) {
    const body = errorBody(code, message);
    res.writeHead(body.status, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        ...headers,
    });
    res.end(JSON.stringify(body));
}
export async function startMetricsServer(registry, host, port) {
    const server = createServer((req, res) => {
        const path = (req.url ?? '').split('?', 1)[0];
        if (path !== '/metrics') {
            sendError(res, 'not_found', 'only /metrics is served here');
            return;
        }
        if (req.method !== 'GET') {
            sendError(res, 'method_not_allowed', 'only GET is allowed on /metrics', { allow: 'GET' });
            return;
        }
        registry.metrics().then((text) => {
            res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
            res.end(text);
        }, () => sendError(res, 'internal_error', 'the metrics could not be collected'));
    });
    await new Promise((resolve, reject) => {
        const failed = (err) => reject(new Error(`metrics cannot listen on ${host}:${port} (${err.message}); set PETSTORE_METRICS_PORT to another port or off`));
        server.once('error', failed);
        server.listen(port, host, () => {
            server.off('error', failed);
            resolve();
        });
    });
    const { address, family, port: bound } = server.address();
    return {
        url: `http://${family === 'IPv6' ? `[${address}]` : address}:${bound}/metrics`,
        close: () => new Promise((resolve) => {
            server.close(() => resolve());
            // A scraper's keep-alive connection would otherwise hold the close open.
            server.closeAllConnections();
        }),
    };
}
//# sourceMappingURL=metrics-server.js.map