import { expect } from 'chai';
import { newRequestId } from '../../src/http/request-id';

describe('newRequestId', () => {
  it('is req_ and 32 hex digits', () => {
    expect(newRequestId()).to.match(/^req_[0-9a-f]{32}$/);
  });

  it('starts with the time in ms, so ids sort by creation across milliseconds', () => {
    const before = Date.now();
    const id = newRequestId();
    const stamped = parseInt(id.slice(4, 16), 16);
    expect(stamped).to.be.within(before, Date.now());
  });

  it('differs between ids made in the same millisecond', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newRequestId()));
    expect(ids.size).to.equal(1000);
  });
});
