// The OpenAPI `links` of the operations' responses: which call follows which, with the values it
// takes from the response, so generated clients and API tools can chain them.

type Link = { operationId: string; parameters: Record<string, string>; description: string }

/** By operationId, then response status: the links of that response. */
export const responseLinks: Record<string, Record<string, Record<string, Link>>> = {
  createPet: {
    '201': {
      getCreatedPet: {
        operationId: 'getPet',
        parameters: { petId: '$response.body#/id' },
        description:
          'The animal just added: `petId` is the `id` of the body, also the last segment of `Location`.',
      },
    },
  },
  listPets: {
    '200': {
      nextPage: {
        operationId: 'listPets',
        parameters: { limit: '$request.query.limit', status: '$request.query.status' },
        description:
          'The next page, when this one carries `Link: <…>; rel="next"`: the same `limit` and `status` with the `cursor` of that URL (a runtime expression cannot take a part of a header, so the cursor is not in `parameters`); or simply that URL. The last page has no `rel="next"`.',
      },
    },
  },
}
