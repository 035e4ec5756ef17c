import { expect } from 'chai';
import { randomHex } from '../src/random-hex';

describe('randomHex', () => {
  it('gives the asked number of bytes as lower-case hex', () => {
    for (const bytes of [1, 12, 16, 4096]) expect(randomHex(bytes)).to.match(new RegExp(`^[0-9a-f]{${bytes * 2}}$`));
  });

  it('never hands out the same bytes twice, across many refills of its pool', () => {
    // 20,000 ids of 12 bytes draw 240,000 bytes: about 59 refills of the 4 KiB pool.
    const ids = new Set<string>();
    for (let i = 0; i < 20_000; i++) ids.add(randomHex(12));
    expect(ids.size).to.equal(20_000);
  });

  it('gives a whole id where a draw crosses the end of the pool', () => {
    randomHex(4000);
    const lengths = Array.from({ length: 20 }, () => randomHex(12).length);
    expect(lengths).to.deep.equal(Array(20).fill(24));
  });

  it('spreads its digits evenly', () => {
    const counts = new Map<string, number>();
    for (const digit of randomHex(4000)) counts.set(digit, (counts.get(digit) ?? 0) + 1);
    // 8,000 digits, 500 expected of each of the 16: a bound of ±40% is far past chance.
    expect(counts.size).to.equal(16);
    for (const [digit, count] of counts) expect(count, digit).to.be.within(300, 700);
  });
});
