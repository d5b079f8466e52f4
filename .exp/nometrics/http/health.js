export async function healthRoutes(app, opts) {
    const hidden = { hide: true };
    app.get('/healthz', { config: { public: true, operation: 'healthz' }, schema: hidden }, async () => ({ status: 'ok' }));
    app.get('/readyz', { config: { public: true, operation: 'readyz' }, schema: hidden }, async (request, reply) => {
        if (opts.isDraining()) {
            reply.code(503);
            return { code: 'service_unavailable', message: 'shutting down', status: 503 };
        }
        try {
            await opts.store.ping();
        }
        catch (err) {
            request.log.warn({ err }, 'storage is not reachable');
            reply.code(503);
            return { code: 'service_unavailable', message: 'storage is not reachable', status: 503 };
        }
        return { status: 'ready' };
    });
}
//# sourceMappingURL=health.js.map