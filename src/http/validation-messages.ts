// What a failed schema check says: the field or parameter it names, and what it must be.

export interface ValidationIssue {
  keyword: string
  instancePath: string
  message?: string
  params: Record<string, unknown>
  parentSchema?: { minLength?: number; maxLength?: number; 'x-pattern-message'?: string }
}

const PARTS: Record<string, string> = {
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  object: 'a JSON object',
  array: 'an array',
  boolean: 'a boolean',
}

/** A field name from the body as a message repeats it: the whole body may be one long name. */
const shownName = (name: string) => (name.length <= 64 ? name : `${name.slice(0, 64)}…`)

/** A 400 message that names the offending field or parameter. */
export function describeValidation(context: string, issue: ValidationIssue): string {
  const name = issue.instancePath.split('/').filter(Boolean).join('.')
  const body = context === 'body'
  const what = name ? `${PARTS[context] ?? 'field'} '${name}'` : body ? 'request body' : context
  const p = issue.params
  switch (issue.keyword) {
    case 'required':
      return `missing required ${body ? 'field' : context} '${p.missingProperty}'`
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
