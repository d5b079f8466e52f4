// The API's payloads, defined once: these schemas validate requests, shape responses, give the
// TypeScript types, and are the components of the OpenAPI document.
import { Type } from '@sinclair/typebox';
import { errorCodes } from '../errors.js';
import { petStatuses } from '../storage/store.js';
/** A JSON integer in the int64 range; carried as BigInt in the service so no digit is lost. */
export const Int64 = (options = {}) => Type.Unsafe({ type: 'integer', format: 'int64', ...options });
export const PetStatus = Type.Unsafe({
    type: 'string',
    enum: [...petStatuses],
    title: 'PetStatus',
    description: 'Availability of the animal.',
});
const petName = Type.String({
    minLength: 1,
    maxLength: 255,
    // At least one character that is not Unicode White_Space.
    pattern: '[^\\p{White_Space}]',
    'x-pattern-message': 'must contain a character that is not white space',
    description: "The animal's name: 1 to 255 Unicode code points, not only white space, without U+0000.",
});
export const NewPet = Type.Object({
    name: petName,
    categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
    status: Type.Optional(PetStatus),
}, { title: 'NewPet', additionalProperties: false });
export const Pet = Type.Object({
    id: Int64({ description: 'Unique identifier, assigned by the service on creation.' }),
    name: petName,
    categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
    status: Type.Optional(PetStatus),
}, { title: 'Pet' });
export const Pets = Type.Array(Pet, { title: 'Pets' });
export const ErrorSchema = Type.Object({
    code: Type.Unsafe({
        type: 'string',
        enum: [...errorCodes],
        description: 'Machine-readable error code.',
    }),
    message: Type.String({ description: 'Human-readable description.' }),
    status: Type.Integer({ description: 'The HTTP status code of the response.' }),
}, { title: 'Error' });
export const ListPetsQuery = Type.Object({
    limit: Type.Optional(Type.Integer({
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'Maximum number of animals returned.',
    })),
    status: Type.Optional(PetStatus),
    cursor: Type.Optional(Type.String({
        description: 'Opaque position from the `Link: rel="next"` header of the previous page.',
    })),
});
export const PetIdParams = Type.Object({
    petId: Int64({ description: 'Identifier of the animal.' }),
});
/** The named schemas that become `components.schemas` of the OpenAPI document. */
export const componentSchemas = {
    Pet,
    NewPet,
    Pets,
    PetStatus,
    Error: ErrorSchema,
};
//# sourceMappingURL=schemas.js.map