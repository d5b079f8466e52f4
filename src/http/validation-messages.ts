// What a failed schema check says: the field or parameter it names, and what it must be.

export interface ValidationIssue {
  keyword: string
  instancePath: string
  message?: string
  params: Record<string, unknown>
  parentSchema?: { minLength?: number; maxLength?: number; 'x-pattern-message'?: string }
}

const PARTS: Record<string, (name: string) => string> = {
  body: (name) => `field '${name}'`,
  querystring: (name) => `query parameter '${name}'`,
  params: (name) => `path parameter '${name}'`,
  headers: (name) => `header '${name}'`,
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  object: 'a JSON object',
  array: 'an array',
  boolean: 'a boolean',
}

/** A field name from the body as a message repeats it: the whole body may be one long name. */
const SHOWN_NAME_MAX = 64
const shownName = (name: string) =>
  name.length <= SHOWN_NAME_MAX ? name : `${name.slice(0, SHOWN_NAME_MAX)}…`

/** A 400 message that names the offending field or parameter. */
export function describeValidation(context: string, issue: ValidationIssue): string {
  const name = issue.instancePath.split('/').filter(Boolean).join('.')
  const what = name
    ? (PARTS[context] ?? PARTS.body!)(name)
    : context === 'body'
      ? 'request body'
      : context
  const p = issue.params
  switch (issue.keyword) {
    case 'required':
      return context === 'body'
        ? `missing required field '${p.missingProperty}'`
        : `missing required ${context} '${p.missingProperty}'`
    case 'additionalProperties':
      return p.additionalProperty === 'id'
        ? `field 'id' must not be sent: the service assigns ids`
        : `unknown field '${shownName(String(p.additionalProperty))}'`
    case 'type':
      return `${what} must be ${TYPE_NAMES[String(p.type)] ?? p.type}`
    case 'enum':
      return `${what} must be one of: ${(p.allowedValues as unknown[]).join(', ')}`
    case 'minLength':
    case 'maxLength': {
      const { minLength = 0, maxLength } = issue.parentSchema ?? {}
      const range =
        maxLength === undefined ? `at least ${minLength}` : `${minLength} to ${maxLength}`
      return `${what} must be ${range} characters long`
    }
    case 'pattern':
      return `${what} ${issue.parentSchema?.['x-pattern-message'] ?? 'has an invalid format'}`
    default:
      return `${what} ${issue.message ?? 'is invalid'}`
  }
}
