// The JavaScript address ranges of PETSTORE_TRUST_PROXY agree with Node's own BlockList on
// generated addresses and CIDRs, and read IPv4-mapped IPv6 addresses as the IPv4 they carry.
import assert from 'node:assert/strict'
import { BlockList, isIP } from 'node:net'
import { test } from 'node:test'
import fc from 'fast-check'
import { inRanges, parseRange } from '../../src/http/address-ranges.js'
import { storeIndependent } from '../support/stores.js'

/** An address of the family, near the range's so that both sides of a prefix are generated. */
const ipv4 = fc.oneof(fc.ipV4(), fc.constantFrom('10.0.0.1', '10.255.255.255', '11.0.0.0'))
const ipv6 = fc.oneof(fc.ipV6(), fc.constantFrom('fc00::1', 'fdff:ffff::1', 'fe00::', '::', '::1'))

storeIndependent(() => {
  test('inRanges agrees with net.BlockList on generated IPv4 and IPv6 CIDRs', () => {
    for (const [family, addresses, max] of [
      ['ipv4', ipv4, 32],
      ['ipv6', ipv6, 128],
    ] as const) {
      fc.assert(
        fc.property(
          fc.array(fc.tuple(addresses, fc.integer({ min: 1, max })), {
            minLength: 1,
            maxLength: 4,
          }),
          fc.array(addresses, { minLength: 1, maxLength: 20 }),
          (cidrs, probes) => {
            // IPv4-mapped addresses are read as IPv4 here; BlockList keeps them IPv6.
            const plain = probes.filter((p) => !/^::ffff:/i.test(p) && isIP(p) !== 0)
            const blocks = new BlockList()
            for (const [address, prefix] of cidrs) blocks.addSubnet(address, prefix, family)
            const ranges = cidrs.map(([address, prefix]) => parseRange(`${address}/${prefix}`))
            for (const probe of plain) {
              assert.equal(
                inRanges(ranges, probe),
                blocks.check(probe, family),
                `${probe} in ${cidrs}`,
              )
            }
          },
        ),
        { numRuns: 500 },
      )
    }
  })

  test('an IPv4-mapped IPv6 address is the IPv4 address it carries; text that is no address is in no range', () => {
    const ranges = ['10.0.0.0/8', '::ffff:192.168.0.0/112'].map(parseRange)
    assert.equal(inRanges(ranges, '::ffff:10.1.2.3'), true)
    assert.equal(inRanges(ranges, '192.168.4.5'), true)
    assert.equal(inRanges(ranges, '11.0.0.1'), false)
    for (const text of ['', 'unknown', '10.0.0.1:80', '[::1]', 'x'.repeat(1000)]) {
      assert.equal(inRanges(ranges, text), false, text)
    }
    for (const bad of [
      '10.0.0.0/0',
      '10.0.0.0/33',
      'fe80::1%eth0/64',
      'nope',
      '::ffff:1.2.3.4/95',
    ]) {
      assert.throws(() => parseRange(bad), bad)
    }
  })
})
