// The part of oas-validator (no types of its own) the tests use.
declare module 'oas-validator' {
  /** Resolves when `doc` is a valid OpenAPI 3.0.x document; rejects with the first problem. */
  export function validate(doc: object, options: object): Promise<{ valid: boolean }>
  const oasValidator: { validate: typeof validate }
  export default oasValidator
}
