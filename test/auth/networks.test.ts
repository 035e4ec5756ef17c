import { expect } from 'chai';
import { NetworkList, networkListProblem } from '../../src/auth/networks';

describe('auth/networks', () => {
  const list = NetworkList.compile(['10.0.0.0/8', '2001:db8::/32', '192.0.2.7', '::1']);

  it('matches IPv4 addresses by prefix, a bare address as /32', () => {
    expect(list.matches('10.0.0.1')).to.equal(true);
    expect(list.matches('10.255.255.255')).to.equal(true);
    expect(list.matches('11.0.0.1')).to.equal(false);
    expect(list.matches('192.0.2.7')).to.equal(true);
    expect(list.matches('192.0.2.8')).to.equal(false);
  });

  it('matches an IPv4-mapped IPv6 address against its IPv4 network', () => {
    expect(list.matches('::ffff:10.1.2.3')).to.equal(true);
    expect(list.matches('::ffff:172.16.0.1')).to.equal(false);
    expect(NetworkList.compile(['::ffff:10.0.0.0/104']).matches('10.9.9.9')).to.equal(true);
  });

  it('matches IPv6 by prefix, in any spelling', () => {
    expect(list.matches('2001:db8::1')).to.equal(true);
    expect(list.matches('2001:0DB8:ffff:0:0:0:0:1')).to.equal(true);
    expect(list.matches('2001:db9::1')).to.equal(false);
    expect(list.matches('::1')).to.equal(true);
    expect(list.matches('::2')).to.equal(false);
    expect(list.matches('fe80::1%eth0')).to.equal(false);
    expect(NetworkList.compile(['fe80::/10']).matches('fe80::1%eth0')).to.equal(true);
    expect(NetworkList.compile(['2001:db8:abcd:12::/63']).matches('2001:db8:abcd:13::5')).to.equal(true);
    expect(NetworkList.compile(['2001:db8:abcd:12::/64']).matches('2001:db8:abcd:13::5')).to.equal(false);
    expect(NetworkList.compile(['::/0']).matches('2001:db8::1')).to.equal(true);
    expect(NetworkList.compile(['0.0.0.0/0']).matches('8.8.8.8')).to.equal(true);
  });

  it('matches nothing that is not an address', () => {
    for (const text of ['', 'unknown', '10.0.0', '10.0.0.256', '2001:db8::1::2', '1:2:3:4:5:6:7:8:9', ':1']) {
      expect(list.matches(text), text).to.equal(false);
    }
  });

  it('says what is wrong with a list', () => {
    expect(networkListProblem(['10.0.0.0/8', '2001:db8::/32'])).to.equal(null);
    expect(networkListProblem([])).to.match(/at least one/);
    expect(networkListProblem(['10.0.0.0/33'])).to.match(/"10.0.0.0\/33" is not a network/);
    expect(networkListProblem(['2001:db8::/129'])).to.match(/is not a network/);
    expect(networkListProblem(['example.com'])).to.match(/is not a network/);
    expect(networkListProblem(Array.from({ length: 501 }, () => '10.0.0.1'))).to.match(/at most 500/);
  });
});
