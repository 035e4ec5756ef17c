/**
 * The Redis book's key layout (src/billing/book-layout.ts): unchanged names on a single server, and on
 * a Cluster one hash tag per group, the groups' slots spread evenly, every key of an account's work in
 * its group, and names found by a scan mapped back to their group.
 */
import { expect } from 'chai';
import { bookLayout, CLUSTER_GROUPS, crc16 } from '../../src/billing/book-layout';

const SLOTS = 16384;

/** The slot Redis Cluster gives a key: its hash tag's CRC16 (the whole key without one) mod 16384. */
function slotOf(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return crc16(close > open + 1 ? key.slice(open + 1, close) : key) % SLOTS;
}

describe('billing/book layout', () => {
  it('hashes as Redis Cluster does (CRC16 XMODEM: CLUSTER KEYSLOT 123456789 is 12739)', () => {
    expect(crc16('123456789')).to.equal(0x31c3);
    expect(crc16('123456789') % SLOTS).to.equal(12739);
  });

  it('keeps the names a single server always had: one group under the configured prefix', () => {
    const layout = bookLayout('tollgate:', false);
    expect(layout.groups).to.have.length(1);
    const group = layout.groupOf('acc_1');
    expect(group.account('acc_1')).to.equal('tollgate:account:acc_1');
    expect(group.undrained('i-1')).to.equal('tollgate:undrained:i-1');
    expect(group.epoch()).to.equal('tollgate:epoch');
    expect(group.holdExpiries()).to.equal('tollgate:hold-expiries');
    expect(layout.pattern('budget:')).to.equal('tollgate:budget:*');
    expect(layout.parse('tollgate:budget:key:k1:0:1')).to.deep.equal({ group, rest: 'budget:key:k1:0:1' });
    expect(layout.parse('other:account:acc_1')).to.equal(null);
  });

  it('puts every key of one account on a Cluster in one slot, and spreads the groups evenly over the slots', () => {
    const layout = bookLayout('tollgate:', true);
    expect(layout.groups).to.have.length(CLUSTER_GROUPS);
    const slots = layout.groups.map((group) => slotOf(group.epoch()));
    // Group i's slot lies in the i-th of CLUSTER_GROUPS equal ranges: three primaries made by
    // `redis-cli --cluster create` (contiguous thirds) each get a third of the groups, give or take one.
    slots.forEach((slot, index) => expect(Math.floor((slot * CLUSTER_GROUPS) / SLOTS), `group ${index}`).to.equal(index));
    const group = layout.groupOf('acc_1');
    const start = new Date(0);
    const end = new Date(86_400_000);
    const keys = [
      group.account('acc_1'), group.key('key_1'), group.hold('req'), group.settled('req'), group.holdExpiries(),
      group.budget('key', 'key_1', start, end), group.session('account', 'acc_1', 's'), group.creditFence('acc_1'),
      group.creditDone('t'), group.spendFence('key', 'key_1'), group.undrained('i-1'), group.heartbeat('i-1'),
      group.outbox('i-1'), group.instances(), group.epoch(),
    ];
    expect(new Set(keys.map(slotOf)).size).to.equal(1);
    expect(layout.parse(group.budget('key', 'key_1', start, end))).to.deep.equal({ group, rest: 'budget:key:key_1:0:86400000' });
    expect(layout.parse('tollgate:{rl}:win:key:1')).to.equal(null);
  });

  it("spreads accounts over the groups: 3,000 ids land in every group, none with more than twice its share", () => {
    const layout = bookLayout('tollgate:', true);
    const counts = new Map<number, number>();
    for (let n = 0; n < 3000; n++) {
      const index = layout.groupOf(`acc_${n.toString(16).padStart(16, '0')}`).index;
      counts.set(index, (counts.get(index) ?? 0) + 1);
    }
    expect(counts.size).to.equal(CLUSTER_GROUPS);
    expect(Math.max(...counts.values())).to.be.below((2 * 3000) / CLUSTER_GROUPS);
  });
});
