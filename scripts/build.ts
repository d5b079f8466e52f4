// `npm run build`: bundles the service into dist/ with esbuild (type checking is `npm run typecheck`).
//
// Why a bundle and not tsc's one file per module: Node spent about half of the service's start-up
// resolving, reading and compiling some 400 files (~330 of them CommonJS files of dependencies)
// one by one. With one bundle, process start to the first `/readyz` 200 went from 682 to 352 ms,
// and to 296 ms minified (medians of interleaved starts on the bench machine; README "Benchmark").
//
// Layout: every file is at the top of dist/ (main.js, the writer thread's entry, shared and lazy
// chunks), so a path a module builds from its own `import.meta.url` (the writer thread's
// `./writer-thread.js`) is right wherever esbuild puts that module's code.
import { chmodSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { build } from 'esbuild'

const ROOT = resolve(import.meta.dirname, '..')
const OUT = join(ROOT, 'dist')

rmSync(OUT, { recursive: true, force: true })
await build({
  absWorkingDir: ROOT,
  entryPoints: {
    main: 'src/cli/main.ts',
    'writer-thread': 'src/storage/sqlite/writer-thread.ts',
  },
  outdir: OUT,
  bundle: true,
  // Lazy imports (the PostgreSQL store, the migrator, Redis) stay separate files, loaded on use.
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: [
    // A native addon, found at run time through its own `bindings` lookup.
    'better-sqlite3',
    // Loaded on use from node_modules: pg's optional pg-native, the terminal log format, the
    // docs page's script (read as a file), and the Redis client of shared rate limits.
    'pg',
    'pg-native',
    'pino-pretty',
    'redoc',
    'ioredis',
  ],
  // The bundled CommonJS dependencies call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __petstoreCreateRequire } from 'node:module'; const require = __petstoreCreateRequire(import.meta.url);",
  },
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
})
chmodSync(join(OUT, 'main.js'), 0o755)
