import { expect } from 'chai';
import { isTimezone, periodAt, PeriodCache } from '../../src/billing/budget-period';

const HOUR = 3_600_000;

function period(at: string, kind: 'day' | 'week' | 'month', timezone: string): { start: string; end: string; hours: number } {
  const { start, end } = periodAt(new Date(at), kind, timezone);
  return { start: start.toISOString(), end: end.toISOString(), hours: (end.getTime() - start.getTime()) / HOUR };
}

describe('billing/budget periods', () => {
  describe('days across daylight-saving changes', () => {
    it('puts 23:59 and 00:01 local on either side of a midnight that starts a 23-hour day (America/New_York, 2026-03-08)', () => {
      // 23:59 EST on the 7th and 00:01 EST on the 8th, the day the clocks go forward at 02:00.
      const before = period('2026-03-08T04:59:00Z', 'day', 'America/New_York');
      const after = period('2026-03-08T05:01:00Z', 'day', 'America/New_York');
      expect(before).to.deep.equal({ start: '2026-03-07T05:00:00.000Z', end: '2026-03-08T05:00:00.000Z', hours: 24 });
      expect(after).to.deep.equal({ start: '2026-03-08T05:00:00.000Z', end: '2026-03-09T04:00:00.000Z', hours: 23 });
    });

    it('makes the day the clocks go back 25 hours long and the day they go forward 23 (Europe/Berlin)', () => {
      expect(period('2026-03-29T12:00:00Z', 'day', 'Europe/Berlin')).to.deep.equal({ start: '2026-03-28T23:00:00.000Z', end: '2026-03-29T22:00:00.000Z', hours: 23 });
      expect(period('2026-10-25T12:00:00Z', 'day', 'Europe/Berlin')).to.deep.equal({ start: '2026-10-24T22:00:00.000Z', end: '2026-10-25T23:00:00.000Z', hours: 25 });
      // 23:59 and 00:01 local around the midnight before the change, in summer time: different days.
      expect(period('2026-10-24T21:59:00Z', 'day', 'Europe/Berlin').end).to.equal('2026-10-24T22:00:00.000Z');
      expect(period('2026-10-24T22:01:00Z', 'day', 'Europe/Berlin').start).to.equal('2026-10-24T22:00:00.000Z');
    });

    it('starts a day whose midnight the clocks skip at the first instant it has (America/Santiago, 2026-09-06)', () => {
      // Chile moves from 00:00 straight to 01:00: the 6th begins at 04:00 UTC, 01:00 local.
      expect(period('2026-09-06T18:00:00Z', 'day', 'America/Santiago')).to.deep.equal({ start: '2026-09-06T04:00:00.000Z', end: '2026-09-07T03:00:00.000Z', hours: 23 });
      expect(period('2026-09-06T03:59:59Z', 'day', 'America/Santiago').end).to.equal('2026-09-06T04:00:00.000Z');
    });

    it('handles half-hour zones and half-hour changes (Australia/Lord_Howe)', () => {
      expect(period('2026-10-04T12:00:00Z', 'day', 'Australia/Lord_Howe').hours).to.equal(23.5);
    });
  });

  describe('weeks start on Monday', () => {
    it('keeps Sunday 23:59 in the week that began the Monday before, and starts a new one at Monday 00:00', () => {
      expect(period('2026-11-29T23:59:00Z', 'week', 'UTC')).to.deep.equal({ start: '2026-11-23T00:00:00.000Z', end: '2026-11-30T00:00:00.000Z', hours: 168 });
      expect(period('2026-11-30T00:00:00Z', 'week', 'UTC').start).to.equal('2026-11-30T00:00:00.000Z');
    });

    it('runs a week across the end of a year, and across a time zone change (167 hours)', () => {
      expect(period('2026-12-31T12:00:00Z', 'week', 'UTC')).to.deep.equal({ start: '2026-12-28T00:00:00.000Z', end: '2027-01-04T00:00:00.000Z', hours: 168 });
      expect(period('2026-03-25T12:00:00Z', 'week', 'Europe/Berlin')).to.deep.equal({ start: '2026-03-22T23:00:00.000Z', end: '2026-03-29T22:00:00.000Z', hours: 167 });
    });

    it('counts a Monday 00:30 in Tokyo in the new week though it is still Sunday in UTC', () => {
      expect(period('2026-11-29T15:30:00Z', 'week', 'Asia/Tokyo').start).to.equal('2026-11-29T15:00:00.000Z');
    });
  });

  describe('months', () => {
    it('ends January at February 1st 00:00 local, and December in the next year', () => {
      expect(period('2027-01-31T14:59:00Z', 'month', 'Asia/Tokyo')).to.deep.equal({ start: '2026-12-31T15:00:00.000Z', end: '2027-01-31T15:00:00.000Z', hours: 744 });
      expect(period('2027-01-31T15:01:00Z', 'month', 'Asia/Tokyo').start).to.equal('2027-01-31T15:00:00.000Z');
      expect(period('2026-12-15T00:00:00Z', 'month', 'UTC').end).to.equal('2027-01-01T00:00:00.000Z');
    });

    it('has 29 days in February of a leap year and 28 otherwise', () => {
      expect(period('2028-02-15T12:00:00Z', 'month', 'UTC').hours).to.equal(29 * 24);
      expect(period('2027-02-15T12:00:00Z', 'month', 'UTC').hours).to.equal(28 * 24);
    });

    it('is an hour short in the month the clocks go forward (Europe/Berlin, March)', () => {
      expect(period('2026-03-15T12:00:00Z', 'month', 'Europe/Berlin')).to.deep.equal({ start: '2026-02-28T23:00:00.000Z', end: '2026-03-31T22:00:00.000Z', hours: 31 * 24 - 1 });
    });
  });

  it('knows IANA zone names and refuses others', () => {
    expect(isTimezone('UTC')).to.equal(true);
    expect(isTimezone('Europe/Berlin')).to.equal(true);
    expect(isTimezone('Europe/Berlim')).to.equal(false);
    expect(isTimezone('')).to.equal(false);
  });

  it('keeps a period while the time is inside it and moves on at its end', () => {
    const cache = new PeriodCache();
    const first = cache.at(new Date('2026-11-27T10:00:00Z'), 'day', 'UTC');
    expect(cache.at(new Date('2026-11-27T23:59:59.999Z'), 'day', 'UTC')).to.equal(first);
    const next = cache.at(new Date('2026-11-28T00:00:00Z'), 'day', 'UTC');
    expect(next.start.toISOString()).to.equal('2026-11-28T00:00:00.000Z');
    expect(cache.at(new Date('2026-11-27T10:00:00Z'), 'day', 'Europe/Berlin').start.toISOString()).to.equal('2026-11-26T23:00:00.000Z');
  });
});
