#!/usr/bin/env -S node --no-memory-reducer --max-semi-space-size=8
// The `petstore` executable (dist/main.js): loads the bundle (dist/petstore.cjs) through Node's
// compile cache (Node 22.1 and later). PETSTORE_COMPILE_CACHE (a directory, or `off`) is read from
// the real environment only: like NODE_OPTIONS, it is about how the code (config.ts included) is
// loaded. A directory Node cannot write costs only speed (docs/operations.md, Start-up).
import module from 'node:module'
import { fileURLToPath } from 'node:url'

const dir =
  process.env.PETSTORE_COMPILE_CACHE || fileURLToPath(new URL('compile-cache', import.meta.url))
const { enableCompileCache } = module as { enableCompileCache?: (dir: string) => unknown }
if (dir !== 'off') enableCompileCache?.(dir)
module.createRequire(import.meta.url)('./petstore.cjs')
