// `npm run build`: bundles the service into dist/ with esbuild (type checking is `npm run typecheck`).
//
// Why a bundle and not tsc's one file per module: Node spent about half of the service's start-up
// resolving, reading and compiling some 400 files (~330 of them CommonJS files of dependencies)
// one by one. With one bundle, process start to the first `/readyz` 200 went from 682 to 352 ms,
// and to 296 ms minified (medians of interleaved starts on the bench machine; docs/performance.md).
//
// Layout: dist/main.js is the `petstore` executable (src/cli/launch.ts), which loads the bundle
// dist/petstore.cjs through Node's compile cache; dist/writer-thread.js is the SQLite writer
// thread's entry, beside the bundle, where src/storage/sqlite/writer.ts looks for it. The /docs
// page serves dist/redoc.standalone.js, a copy of the redoc package's browser bundle
// (src/http/docs-page.ts), so that the container image ships this one file instead of redoc and
// its dependencies, and dist/docs-page-script.js, the page's own script, copied as it is.
//
// Why CommonJS for the bundle: most of what it holds is CommonJS dependencies, which keep the
// require(), __dirname and __filename that an ES module would have to be given. One file, as
// CommonJS cannot split into chunks: the modules loaded on use (the PostgreSQL store, the
// migrator) are in it, compiled only if called.
import { createHash } from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative, resolve } from 'node:path'
import { type BuildOptions, build } from 'esbuild'

const ROOT = resolve(import.meta.dirname, '..')
const OUT = join(ROOT, 'dist')
const STAMP = join(OUT, '.inputs-sha256')

/**
 * What the bundle is made from. `npm install` builds (prepare) and `npm test` builds again: the
 * second build is skipped when nothing it reads has changed.
 */
function inputsDigest(): string {
  const files = [
    ...readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
      .map((name) => join(ROOT, 'src', name))
      .filter((file) => statSync(file).isFile()),
    join(ROOT, 'scripts', 'build.ts'),
    // The bundle holds package.json's version (`petstore --version`); esbuild reads tsconfig.json.
    join(ROOT, 'package.json'),
    join(ROOT, 'package-lock.json'),
    join(ROOT, 'tsconfig.json'),
  ].sort()
  const hash = createHash('sha256')
  for (const file of files) hash.update(`${relative(ROOT, file)}\0`).update(readFileSync(file))
  return hash.digest('hex')
}

const digest = inputsDigest()
if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === digest) {
  process.stdout.write('dist/ is up to date\n')
  process.exit(0)
}

const common: BuildOptions = {
  absWorkingDir: ROOT,
  outdir: OUT,
  bundle: true,
  platform: 'node',
  target: 'node20',
  // Stack traces under `--enable-source-maps` (npm start) point into src/; without the sources'
  // text the maps are a third of the size, and Node parses them at start-up.
  sourcemap: true,
  sourcesContent: false,
  // Whitespace and syntax only; names stay, so stack traces without source maps still read. V8
  // keeps a script's source text in the heap: unminified (2.6 MB), the bundle held ~18 MB more
  // heap than the unbundled build after the same load (43.7 vs 25.2 MB used) and peak RSS went
  // from ~134 to ~166 MB after 20 s each of list, get and create. Minified (1.6 MB): 20.9 MB used,
  // peak RSS 133–137 MB, as before the bundle.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
}

rmSync(OUT, { recursive: true, force: true })
await build({
  ...common,
  entryPoints: { petstore: 'src/cli/main.ts' },
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  external: [
    // A native addon, found at run time through its own `bindings` lookup (either major version).
    'better-sqlite3',
    'better-sqlite3-napi',
    // Loaded on use from node_modules: pg's optional pg-native, the terminal log format, the
    // docs page's script (read as a file), and the Redis client of shared rate limits.
    'pg',
    'pg-native',
    'pino-pretty',
    'redoc',
    'ioredis',
  ],
  // The modules that find files beside themselves (the writer thread's entry, node_modules) read
  // import.meta.url, which CommonJS does not have: here it is the bundle's own URL.
  define: { 'import.meta.url': '__petstoreBundleUrl' },
  // "use strict" first: the banner would otherwise come before esbuild's own directive and void it,
  // and the code was written for ES modules, which are strict.
  banner: {
    js: "'use strict';const __petstoreBundleUrl = require('node:url').pathToFileURL(__filename).href;",
  },
})
await build({ ...common, entryPoints: { main: 'src/cli/launch.ts' }, format: 'esm' })
await build({
  ...common,
  entryPoints: { 'writer-thread': 'src/storage/sqlite/writer-thread.ts' },
  format: 'esm',
  external: ['better-sqlite3', 'better-sqlite3-napi'],
  // The bundled CommonJS dependencies call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __petstoreCreateRequire } from 'node:module'; const require = __petstoreCreateRequire(import.meta.url);",
  },
})
chmodSync(join(OUT, 'main.js'), 0o755)
copyFileSync(
  createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js'),
  join(OUT, 'redoc.standalone.js'),
)
copyFileSync(join(ROOT, 'src/http/docs-page-script.js'), join(OUT, 'docs-page-script.js'))
writeFileSync(STAMP, digest)
