// The OpenAPI 3.1 document, generated from the route schemas by @fastify/swagger.
import swagger from '@fastify/swagger';
import { componentSchemas } from '../pets/schemas.js';
/** Replaces every schema titled like a component with a $ref to it, so each is defined once. */
function hoistComponents(node, titles, isRoot = true) {
    if (Array.isArray(node))
        return node.map((n) => hoistComponents(n, titles, false));
    if (node === null || typeof node !== 'object')
        return node;
    const obj = node;
    if (!isRoot && typeof obj.title === 'string' && titles.has(obj.title)) {
        return { $ref: `#/components/schemas/${obj.title}` };
    }
    const out = {};
    for (const [k, v] of Object.entries(obj))
        out[k] = hoistComponents(v, titles, false);
    return out;
}
/** Fastify sees header names in lower case; the document shows them as clients write them. */
function headerCase(node) {
    if (Array.isArray(node))
        return node.map(headerCase);
    if (node === null || typeof node !== 'object')
        return node;
    const obj = node;
    const out = {};
    for (const [k, v] of Object.entries(obj))
        out[k] = headerCase(v);
    if (obj.in === 'header' && typeof obj.name === 'string') {
        out.name = obj.name.replace(/(^|-)([a-z])/g, (_m, dash, c) => dash + c.toUpperCase());
    }
    return out;
}
/** Paths are relative to the servers, which end in /v1. */
function stripVersionPrefix(paths = {}) {
    return Object.fromEntries(Object.entries(paths).map(([p, v]) => [p.replace(/^\/v1(?=\/)/, ''), v]));
}
export async function registerOpenApi(app, opts) {
    const titles = new Set(Object.keys(componentSchemas));
    await app.register(swagger, {
        openapi: {
            openapi: '3.1.0',
            info: {
                title: 'Pet Store',
                version: '1.0.0',
                description: 'The catalogue of animals of a pet store.',
            },
            servers: [
                { url: opts.productionUrl, description: 'Production' },
                { url: opts.stagingUrl, description: 'Staging' },
            ],
            tags: [{ name: 'animals', description: 'The animals of the catalogue.' }],
            components: {
                securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
            },
            security: [{ bearerAuth: [] }],
        },
        transformObject: (documentObject) => {
            const doc = documentObject.openapiObject;
            const components = (doc.components ?? {});
            const schemas = Object.fromEntries(Object.entries(componentSchemas).map(([name, schema]) => [
                name,
                hoistComponents(JSON.parse(JSON.stringify(schema)), titles),
            ]));
            return {
                ...doc,
                paths: headerCase(hoistComponents(stripVersionPrefix(doc.paths), titles)),
                components: { ...components, schemas },
                'x-tagGroups': [
                    { name: 'Store', tags: ['animals'] },
                    { name: 'Pets', tags: ['animals'] },
                ],
            };
        },
    });
    let document;
    app.get('/v1/openapi.json', { config: { public: true, operation: 'openapi' }, schema: { hide: true } }, async (_request, reply) => {
        document ??= JSON.stringify(app.swagger());
        reply.type('application/json; charset=utf-8');
        return document;
    });
}
//# sourceMappingURL=openapi.js.map