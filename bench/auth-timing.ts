// `npm run bench:auth-timing`: how long a refused key takes to check, for a wrong secret of a key
// id that exists and for an id that does not, measured in interleaved rounds on a real SQLite
// store. The two medians should not tell the cases apart.
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { ApiKeyVerifier, createApiKey } from '../src/auth/api-keys.js'
import { systemClock } from '../src/clock.js'
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '41' },
    checks: { type: 'string', default: '2000' },
  },
})
const rounds = Number(values.rounds)
const checks = Number(values.checks)

const dir = mkdtempSync(join(tmpdir(), 'petstore-auth-timing-'))
const store = await openSqliteStore(join(dir, 'petstore.db'))
try {
  const { key, record } = await createApiKey(store, systemClock, 'bench')
  const verifier = new ApiKeyVerifier(store, systemClock, [])
  const secret = key.slice(`pet_${record.id}_`.length)
  // Same length and alphabet as real keys: only whether the id exists differs.
  const wrongSecret = `pet_${record.id}_${secret.startsWith('A') ? 'B' : 'A'}${secret.slice(1)}`
  const unknownId = `pet_${record.id === '000000000000' ? '000000000001' : '000000000000'}_${secret}`

  const nsPerCheck = async (presented: string): Promise<number> => {
    const started = process.hrtime.bigint()
    for (let i = 0; i < checks; i++) {
      if ((await verifier.verify(presented)) !== null) throw new Error('a refused key was taken')
    }
    return Number(process.hrtime.bigint() - started) / checks
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const samples = { wrongSecret: [] as number[], unknownId: [] as number[] }
  // Warm-up, then rounds that alternate which case goes first.
  await nsPerCheck(wrongSecret)
  await nsPerCheck(unknownId)
  for (let r = 0; r < rounds; r++) {
    const order =
      r % 2 === 0
        ? (['wrongSecret', 'unknownId'] as const)
        : (['unknownId', 'wrongSecret'] as const)
    for (const which of order) {
      samples[which].push(await nsPerCheck(which === 'wrongSecret' ? wrongSecret : unknownId))
    }
  }
  const a = median(samples.wrongSecret)
  const b = median(samples.unknownId)
  console.log(
    `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${new Date().toISOString()}`,
  )
  console.log(`${rounds} rounds of ${checks} checks each; median ns per check`)
  console.log(`  wrong secret of a known key id: ${a.toFixed(0)}`)
  console.log(`  unknown key id:                 ${b.toFixed(0)}`)
  console.log(`  difference:                     ${(((b - a) / a) * 100).toFixed(1)}%`)
} finally {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
}
