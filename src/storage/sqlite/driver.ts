// The better-sqlite3 this Node.js can run, both with the same API: 13 needs Node.js 22, and 12
// aborts on Node.js 24.19 and later when a statement is collected (nodejs/node#65446).
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'

const require = createRequire(import.meta.url)
const nodeMajor = Number(process.versions.node.split('.')[0])

export const SQLITE_DRIVER = nodeMajor >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3'
export const Database = require(SQLITE_DRIVER) as typeof BetterSqlite3
