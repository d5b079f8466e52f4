#!/usr/bin/env -S node --no-memory-reducer --max-semi-space-size=8
// The `petstore` executable (dist/main.js): loads the bundle (dist/petstore.cjs) through Node's
// compile cache, on Node 22.1 and later; Node 20 has none and compiles as it always does.
// PETSTORE_COMPILE_CACHE (a directory, or `off`) is read here, from the real environment only: like
// NODE_OPTIONS, it is about how the code (config.ts included) is loaded. Node ignores a directory
// it cannot make or write: a missing cache costs only speed (docs/operations.md, Start-up).
import module from 'node:module'
import { fileURLToPath } from 'node:url'

const dir =
  process.env.PETSTORE_COMPILE_CACHE || fileURLToPath(new URL('compile-cache', import.meta.url))
const { enableCompileCache } = module as { enableCompileCache?: (dir: string) => unknown }
if (dir !== 'off') enableCompileCache?.(dir)
module.createRequire(import.meta.url)('./petstore.cjs')
