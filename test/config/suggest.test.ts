import { expect } from 'chai';
import { closestName, editDistance } from '../../src/config/suggest';

describe('config/suggest', () => {
  const distances: [string, string, number][] = [
    ['protocl', 'protocol', 1],
    ['prot', 'port', 1],
    ['hots', 'host', 1],
    ['colour', 'host', 5],
    ['', 'abc', 3],
  ];
  for (const [a, b, distance] of distances) {
    it(`measures ${a} → ${b} as ${distance}`, () => {
      expect(editDistance(a, b)).to.equal(distance);
    });
  }

  it('suggests the closest known name within distance 2', () => {
    expect(closestName('protocl', ['base_url', 'protocol'])).to.equal('protocol');
    expect(closestName('Base_URL', ['base_url'])).to.equal('base_url');
  });

  it('suggests nothing when every name is too far', () => {
    expect(closestName('colour', ['host', 'port'])).to.equal(undefined);
    expect(closestName('x', ['id'])).to.equal(undefined);
  });
});
