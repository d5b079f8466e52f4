// The better-sqlite3 this Node.js can run. Version 12 builds on Node's own ObjectWrap, which aborts
// the process on Node.js 24.19 and later when a statement is collected (nodejs/node#65446);
// version 13 uses Node-API, ships its binaries, and needs Node.js 22. So 13 runs on 22 and later,
// 12 on 20. Their API is the same.
import { createRequire } from 'node:module'
import type BetterSqlite3 from 'better-sqlite3'

const require = createRequire(import.meta.url)
const nodeMajor = Number(process.versions.node.split('.')[0])

export const SQLITE_DRIVER = nodeMajor >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3'
export const Database = require(SQLITE_DRIVER) as typeof BetterSqlite3
