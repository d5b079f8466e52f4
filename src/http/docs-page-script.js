// The /docs page's script (served by docs-page.ts): the OpenAPI document with every int64 digit
// kept, handed to Redoc, and the "Try it" panel. Plain DOM: the CSP allows only this origin.
;(() => {
  const KEY_STORAGE = 'petstore.apiKey'
  const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']
  const script = document.currentScript
  const specUrl = script.dataset.specUrl

  /**
   * JSON.parse, except that an integer it would round (past 2^53, as int64 bounds are) is given
   * to `exact` as its digits instead of becoming a nearby double.
   */
  const parseExact = (text, exact) =>
    JSON.parse(text, (_key, value, context) =>
      typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context.source)
        ? exact(context.source)
        : value,
    )

  /** JSON.stringify with two-space indents, writing a BigInt as its digits. */
  const stringify = (value) =>
    JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? JSON.rawJSON(String(v)) : v), 2)

  /** The object a local `$ref` (`#/components/...`) points to; other objects as they are. */
  function resolve(spec, node) {
    let current = node
    for (let hops = 0; current && typeof current.$ref === 'string' && hops < 16; hops++) {
      const ref = current.$ref
      if (!ref.startsWith('#/')) return undefined
      current = ref
        .slice(2)
        .split('/')
        .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce((parent, part) => parent?.[part], spec)
    }
    return current
  }

  /** A value of `schema` built from its examples, as a reader would start from. */
  function sample(spec, node, depth = 0) {
    const schema = resolve(spec, node)
    if (!schema || typeof schema !== 'object' || depth > 8) return undefined
    if ('example' in schema) return schema.example
    if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
    if ('const' in schema) return schema.const
    if ('default' in schema) return schema.default
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
    for (const part of schema.allOf ?? schema.oneOf ?? schema.anyOf ?? []) {
      const value = sample(spec, part, depth + 1)
      if (value !== undefined) return value
    }
    if (schema.type === 'array') return []
    if (!schema.properties) return undefined
    const object = {}
    for (const [name, property] of Object.entries(schema.properties)) {
      const value = sample(spec, property, depth + 1)
      if (value !== undefined) object[name] = value
    }
    return object
  }

  /** The JSON body a create starts from: the document's example, else one built from the schema. */
  function bodyExample(spec, operation) {
    const media = resolve(spec, operation.requestBody)?.content?.['application/json']
    if (!media) return undefined
    if ('example' in media) return stringify(media.example)
    const first = Object.values(media.examples ?? {})[0]
    const example = resolve(spec, first)
    if (example && 'value' in example) return stringify(example.value)
    return stringify(sample(spec, media.schema) ?? {})
  }

  /** Every operation of the document, with its parameters and body example. */
  function operationsOf(spec) {
    const operations = []
    for (const [path, item] of Object.entries(spec.paths ?? {})) {
      for (const method of METHODS) {
        const operation = item[method]
        if (!operation) continue
        const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
          .map((p) => resolve(spec, p))
          .filter((p) => p && ['path', 'query', 'header'].includes(p.in))
        operations.push({
          id: operation.operationId ?? `${method} ${path}`,
          label: `${method.toUpperCase()} ${path}${operation.summary ? ` (${operation.summary})` : ''}`,
          method: method.toUpperCase(),
          path,
          parameters,
          body: bodyExample(spec, operation),
        })
      }
    }
    return operations
  }

  /** The path the document's first server names (`/v1`), taken on this page's own origin. */
  function basePath(spec) {
    const server = spec.servers?.[0]?.url
    return server ? new URL(server, location.href).pathname.replace(/\/$/, '') : ''
  }

  // Storage may be refused (a private window): the key then stays in the field alone.
  const readKey = () => {
    try {
      return sessionStorage.getItem(KEY_STORAGE) ?? ''
    } catch {
      return ''
    }
  }
  const writeKey = (key) => {
    try {
      if (key) sessionStorage.setItem(KEY_STORAGE, key)
      else sessionStorage.removeItem(KEY_STORAGE)
    } catch {}
  }

  function element(tag, properties = {}, children = []) {
    const node = Object.assign(document.createElement(tag), properties)
    node.append(...children)
    return node
  }

  /** The fields of one operation: a labelled input per parameter, and its body. */
  function showOperation(panel, operation) {
    const inputs = operation.parameters.map((parameter) => {
      const example = parameter.example ?? parameter.schema?.example
      return [
        parameter,
        element('input', {
          name: `${parameter.in}:${parameter.name}`,
          required: parameter.required === true,
          placeholder: example === undefined ? '' : String(example),
          autocomplete: 'off',
        }),
      ]
    })
    panel.parameters.replaceChildren(
      ...inputs.map(([parameter, input]) =>
        element('label', {}, [
          `${parameter.name} (${parameter.in}${parameter.required ? ', required' : ''})`,
          input,
        ]),
      ),
    )
    panel.bodyLabel.hidden = operation.body === undefined
    panel.body.value = operation.body ?? ''
    panel.current = { operation, inputs }
  }

  /** The request the form describes, sent to this origin; its answer shown as received. */
  async function send(panel, base) {
    const { operation, inputs } = panel.current
    let path = operation.path
    const query = new URLSearchParams()
    const headers = new Headers()
    for (const [parameter, input] of inputs) {
      if (input.value === '') continue
      if (parameter.in === 'path') {
        path = path.replace(`{${parameter.name}}`, encodeURIComponent(input.value))
      } else if (parameter.in === 'query') query.append(parameter.name, input.value)
      else headers.set(parameter.name, input.value)
    }
    const key = panel.key.value.trim()
    if (key) headers.set('authorization', `Bearer ${key}`)
    const body = operation.body === undefined ? undefined : panel.body.value
    if (body !== undefined) headers.set('content-type', 'application/json')
    const search = query.toString()
    const target = `${base}${path}${search ? `?${search}` : ''}`
    panel.status.textContent = `${operation.method} ${target} …`
    panel.headers.textContent = ''
    panel.answer.textContent = ''
    try {
      const response = await fetch(target, {
        method: operation.method,
        headers,
        body,
        credentials: 'omit',
        cache: 'no-store',
      })
      // The body as received: JSON.parse would round int64 ids past 2^53.
      const text = await response.text()
      // HTTP/2 has no reason phrase.
      const status = `${response.status} ${response.statusText}`.trimEnd()
      panel.status.textContent = `${operation.method} ${target}: ${status}`
      panel.headers.textContent = [...response.headers].map(([n, v]) => `${n}: ${v}`).join('\n')
      panel.answer.textContent = text
    } catch (error) {
      panel.status.textContent = `${operation.method} ${target}: no answer (${error.message})`
    }
  }

  function tryIt(spec) {
    const form = document.getElementById('try-it-form')
    if (!form) return
    const operations = operationsOf(spec)
    const panel = {
      key: form.elements.key,
      select: form.elements.operation,
      parameters: document.getElementById('try-it-parameters'),
      bodyLabel: document.getElementById('try-it-body-label'),
      body: form.elements.body,
      status: document.getElementById('try-it-status'),
      headers: document.getElementById('try-it-headers'),
      answer: document.getElementById('try-it-answer'),
    }
    panel.select.replaceChildren(
      ...operations.map((o) => element('option', { value: o.id, textContent: o.label })),
    )
    const select = (id) => {
      const operation = operations.find((o) => o.id === id)
      if (!operation || panel.current?.operation === operation) return
      panel.select.value = id
      showOperation(panel, operation)
    }
    // Opened, the panel offers the operation the address names, the one Redoc shows: Redoc sets
    // the hash through the History API (menu clicks, scrolling), which fires no hashchange.
    const fromHash = () => select(/\/operation\/([^/]+)$/.exec(location.hash)?.[1] ?? '')
    panel.key.value = readKey()
    panel.key.addEventListener('input', () => writeKey(panel.key.value.trim()))
    panel.select.addEventListener('change', () => select(panel.select.value))
    window.addEventListener('hashchange', fromHash)
    form.parentElement.addEventListener('toggle', (event) => event.target.open && fromHash())
    if (operations.length > 0) showOperation(panel, operations[0])
    fromHash()
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      send(panel, basePath(spec))
    })
    form.hidden = false
  }

  const root = document.querySelector('redoc')
  fetch(specUrl, { headers: { accept: 'application/json' }, credentials: 'omit' })
    .then((response) => {
      if (!response.ok) throw new Error(`${specUrl} answered ${response.status}`)
      return response.text()
    })
    .then((text) => {
      // Redoc shows a bound as `${minimum}`: the digits, as text, show exactly.
      window.Redoc.init(
        parseExact(text, (digits) => digits),
        {},
        root,
      )
      tryIt(parseExact(text, (digits) => BigInt(digits)))
    })
    .catch((error) => {
      root.textContent = `The OpenAPI document could not be read: ${error.message}`
    })
})()
