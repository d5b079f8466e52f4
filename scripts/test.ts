// The test suite on one store: every test/**/*.test.ts (or those under the paths given) through
// `node --test`, PETSTORE_TEST_STORE naming the store (test/support/stores.ts). The glob is
// expanded here: Node 20's --test takes no glob. `--both` runs the SQLite run and then the
// PostgreSQL run whatever the first gave, and ends with one line for each.
//   node --import tsx scripts/test.ts [PATH...]     PETSTORE_TEST_STORE=sqlite|postgres
//   node --import tsx scripts/test.ts --both [PATH...]
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

type Store = 'sqlite' | 'postgres'
const STORES: Store[] = ['sqlite', 'postgres']
const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Every test file under `paths` (files or folders, relative to the root), sorted. */
function testFiles(paths: string[]): string[] {
  const files = new Set<string>()
  for (const path of paths.length > 0 ? paths : ['test']) {
    const full = join(ROOT, path)
    const found = statSync(full).isDirectory()
      ? readdirSync(full, { recursive: true, encoding: 'utf8' }).map((f) => join(full, f))
      : [full]
    for (const f of found) if (f.endsWith('.test.ts')) files.add(relative(ROOT, f))
  }
  return [...files].sort()
}

const DECLARATION = new Set([
  ts.SyntaxKind.ImportDeclaration,
  ts.SyntaxKind.VariableStatement,
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.ClassDeclaration,
  ts.SyntaxKind.InterfaceDeclaration,
  ts.SyntaxKind.TypeAliasDeclaration,
  ts.SyntaxKind.EnumDeclaration,
])

/**
 * The stores a file has tests for: fewer than both only when each top-level statement other than
 * a declaration is a forStore or storeIndependent call. An empty run of a file would otherwise
 * show as a test of its own (Node 20).
 */
function storesOf(file: string): Store[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest)
  const declared = new Set<Store>()
  for (const statement of source.statements) {
    if (DECLARATION.has(statement.kind)) continue
    const call = ts.isExpressionStatement(statement) ? statement.expression : undefined
    if (!call || !ts.isCallExpression(call) || !ts.isIdentifier(call.expression)) return STORES
    const [store] = call.arguments
    if (call.expression.text === 'storeIndependent') declared.add('sqlite')
    else if (call.expression.text === 'forStore' && store && ts.isStringLiteral(store)) {
      declared.add(store.text as Store)
    } else return STORES
  }
  return declared.size === 0 ? STORES : STORES.filter((s) => declared.has(s))
}

function storeOfEnv(): Store {
  const store = process.env.PETSTORE_TEST_STORE ?? 'sqlite'
  if (store !== 'sqlite' && store !== 'postgres') {
    throw new Error(`PETSTORE_TEST_STORE is sqlite or postgres, not ${store}`)
  }
  return store
}

interface Outcome {
  code: number
  counts: Record<string, string>
  seconds: number
}

/**
 * One run of `node --test` on `store`. The spec reporter on every Node line, so that the summary's
 * `ℹ tests N` lines read the same; with `capture`, the output is also kept for them.
 */
function run(store: Store, paths: string[], capture: boolean): Promise<Outcome> {
  const files = testFiles(paths).filter((f) => storesOf(f).includes(store))
  // Given no file, node --test would look for test files everywhere.
  if (files.length === 0) {
    console.log(`no test file for ${store} under ${paths.join(' ') || 'test'}`)
    return Promise.resolve({
      code: 0,
      counts: { tests: '0', pass: '0', fail: '0', cancelled: '0' },
      seconds: 0,
    })
  }
  const args = ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec']
  const started = Date.now()
  const child = spawn(process.execPath, [...args, ...files], {
    cwd: ROOT,
    env: { ...process.env, PETSTORE_TEST_STORE: store },
    stdio: ['inherit', capture ? 'pipe' : 'inherit', 'inherit'],
  })
  let tail = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk)
    tail = (tail + chunk.toString()).slice(-4096)
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      const counts: Record<string, string> = {}
      for (const [, name, value] of tail.matchAll(/^ℹ (\w+) ([\d.]+)$/gm)) counts[name!] = value!
      resolve({ code: code ?? (signal ? 1 : 0), counts, seconds: (Date.now() - started) / 1000 })
    })
  })
}

function summary(store: Store, { code, counts, seconds }: Outcome): string {
  const n = (name: string) => counts[name] ?? '?'
  const time = `${Math.floor(seconds / 60)}m ${Math.round(seconds % 60)}s`
  return `${store}: ${code === 0 ? 'passed' : 'FAILED'}, ${n('tests')} tests (${n('pass')} pass, ${n('fail')} fail, ${n('cancelled')} cancelled), ${time}`
}

const argv = process.argv.slice(2)
if (argv[0] === '--both') {
  const outcomes: [Store, Outcome][] = []
  for (const store of STORES) outcomes.push([store, await run(store, argv.slice(1), true)])
  console.log('')
  for (const [store, outcome] of outcomes) console.log(summary(store, outcome))
  process.exitCode = outcomes.some(([, o]) => o.code !== 0) ? 1 : 0
} else {
  process.exitCode = (await run(storeOfEnv(), argv, false)).code
}
