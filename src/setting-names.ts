// Which PETSTORE_* names the service answers for: its settings, and the few names it leaves to the
// programs around it. Any other PETSTORE_* name is a mistake that stops the start.

/** Read by the launcher (src/cli/launch.ts), the client example and compose.yaml, not by settings. */
const LEFT_TO_OTHERS = new Set([
  'PETSTORE_COMPILE_CACHE',
  'PETSTORE_URL',
  'PETSTORE_KEY',
  'PETSTORE_IMAGE',
  'PETSTORE_HTTP_PORT',
])

/** The test suite's and the benchmarks' own variables: no setting will ever begin so. */
const LEFT_TO_OTHERS_PREFIXES = ['PETSTORE_TEST_', 'PETSTORE_BENCH_']

/**
 * Kubernetes' service links: a Service named `petstore` (or `petstore-metrics`) puts
 * PETSTORE_SERVICE_HOST, PETSTORE_SERVICE_PORT_HTTP, PETSTORE_PORT_8080_TCP_ADDR… and
 * PETSTORE_PORT=tcp://10.0.0.11:8080 (PETSTORE_METRICS_PORT=tcp://…) into every pod.
 */
const SERVICE_LINK =
  /^PETSTORE_(?:[A-Z0-9_]+_)?(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT_\d+_(?:TCP|UDP|SCTP)(?:_PROTO|_PORT|_ADDR)?)$/
const SERVICE_LINK_PORT = /^PETSTORE_(?:[A-Z0-9_]+_)?PORT$/
const SERVICE_ADDRESS = /^(?:tcp|udp|sctp):\/\/[^/\s]+:\d+$/

/**
 * Whether a variable is a service link rather than a setting. A variable set in the pod's own
 * `env` wins over a link of the same name, so a link's value is never the operator's setting.
 */
export function isServiceLink(name: string, value: string | undefined): boolean {
  if (SERVICE_LINK.test(name)) return true
  return SERVICE_LINK_PORT.test(name) && value !== undefined && SERVICE_ADDRESS.test(value)
}

/** Whether `name` is a PETSTORE_* name the service must refuse: neither a setting nor left to others. */
function isUnknown(name: string, known: readonly string[]): boolean {
  if (!name.startsWith('PETSTORE_') || known.includes(name)) return false
  if (LEFT_TO_OTHERS.has(name)) return false
  return !LEFT_TO_OTHERS_PREFIXES.some((prefix) => name.startsWith(prefix))
}

/**
 * A problem for each PETSTORE_* name in `source` that is no setting, sorted, naming the setting it
 * is closest to: a misspelt name would otherwise be ignored and its default used.
 */
export function unknownSettingProblems(
  source: Record<string, string | undefined>,
  known: readonly string[],
): string[] {
  return Object.keys(source)
    .filter((name) => isUnknown(name, known))
    .sort()
    .map((name) => {
      const near = known.find((k) => editDistance(k, name) <= 2)
      return `${name} is not a setting${near ? `; did you mean ${near}?` : ''} (petstore serve --help lists them)`
    })
}

/** Levenshtein distance: how many one-character edits turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, substitution))
    }
    row = next
  }
  return row[b.length]!
}
