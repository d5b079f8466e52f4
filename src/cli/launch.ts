#!/usr/bin/env -S node --no-memory-reducer --max-semi-space-size=8
// The `petstore` executable (dist/main.js): runs the bundle (dist/petstore.cjs) through V8's code
// cache, as Node 20 has no compile cache for modules (docs/operations.md, Start-up).
// PETSTORE_COMPILE_CACHE is read here, from the real environment only: like NODE_OPTIONS, it is
// about how the code (config.ts included) is loaded. A missing or rejected cache costs only speed.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Script } from 'node:vm'

/** The SHA-256 of dist/petstore.cjs, set by scripts/build.ts: a rebuilt bundle never meets an older build's cache. */
declare const PETSTORE_BUNDLE_SHA256: string

const DIST = dirname(fileURLToPath(import.meta.url))
const BUNDLE = join(DIST, 'petstore.cjs')

/** Where the cache of this bundle, Node and its flags lives; null when caching is off. */
function cacheFile(setting: string | undefined): string | null {
  if (setting === 'off') return null
  const dir = setting === undefined || setting === '' ? join(DIST, 'compile-cache') : setting
  // V8 rejects a cache made under other flags; naming the file by them keeps two ways of starting
  // (say, with and without --max-semi-space-size) from overwriting each other's cache at every exit.
  const flags = createHash('sha256')
    .update(`${process.execArgv.join(' ')}\n${process.env.NODE_OPTIONS ?? ''}`)
    .digest('hex')
  const bundle = PETSTORE_BUNDLE_SHA256.slice(0, 16)
  return join(dir, `petstore-${bundle}-${process.version}-${process.arch}-${flags.slice(0, 12)}.v8`)
}

function readCache(file: string | null): Buffer | undefined {
  if (file === null) return undefined
  try {
    return readFileSync(file)
  } catch {
    return undefined
  }
}

/** Writes the cache beside its final name and renames it, so that no process reads half a file. */
function writeCache(file: string, data: Buffer): void {
  const partial = `${file}.${process.pid}.partial`
  try {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(partial, data)
    renameSync(partial, file)
  } catch {
    try {
      rmSync(partial, { force: true })
    } catch {
      // The directory itself is unusable: there is no partial file to remove.
    }
  }
}

function runCached(file: string | null): void {
  const source = readFileSync(BUNDLE, 'utf8')
  const cached = readCache(file)
  // Node's CommonJS wrapper, on the bundle's first line so that line and column numbers match.
  const script = new Script(
    `(function (exports, require, module, __filename, __dirname) {${source}\n})`,
    { filename: BUNDLE, ...(cached ? { cachedData: cached } : {}) },
  )
  if (file !== null && (cached === undefined || script.cachedDataRejected === true)) {
    // Made at exit, the cache also holds every function the run compiled, not only the top level.
    process.once('exit', () => writeCache(file, script.createCachedData()))
  }
  const module = { exports: {} }
  const run = script.runInThisContext() as (...args: unknown[]) => void
  run(module.exports, createRequire(BUNDLE), module, BUNDLE, DIST)
}

// Node 20 maps stack traces to src/ only for code its own loaders compiled.
if (process.sourceMapsEnabled) createRequire(import.meta.url)(BUNDLE)
else runCached(cacheFile(process.env.PETSTORE_COMPILE_CACHE))
