import { expect } from 'chai';
import type { RateLimits } from '../../src/config/types';
import { openaiDuration, rateLimitHeaders, rfc3339, viewOf } from '../../src/rate-limit/headers';
import { shareOf, type Admission, type Decision, type LimitRequest, type Subject } from '../../src/rate-limit/limiter';
import { LocalLimiter } from '../../src/rate-limit/local';

const NONE: RateLimits = { rpm: 0, tpm: 0, concurrency: 0 };

function subject(id: string, limits: Partial<RateLimits>): Subject {
  return { id, limits: { ...NONE, ...limits } };
}

let requests = 0;
function request(subjects: readonly Subject[], tokens = 0): LimitRequest {
  requests += 1;
  return { requestId: `req_${requests}`, subjects, tokens };
}

function admitted(decision: Decision): Admission {
  if (!decision.ok) throw new Error(`expected admission, got ${decision.refused}`);
  return decision.admission;
}

function refused(decision: Decision): string {
  return decision.ok ? 'admitted' : `${decision.refused}@${decision.subject}`;
}

describe('LocalLimiter', () => {
  let now: number;
  let limiter: LocalLimiter;
  beforeEach(() => {
    now = 1_000_000;
    limiter = new LocalLimiter({ now: () => now });
  });

  describe('requests per minute (fixed window opened by the first request)', () => {
    it('admits exactly rpm requests in a window and refuses the next with the time left', () => {
      const key = [subject('key:a', { rpm: 3 })];
      for (let i = 0; i < 3; i++) admitted(limiter.decide(request(key)));
      now += 20_000;
      const decision = limiter.decide(request(key));
      expect(refused(decision)).to.equal('requests@0');
      expect(decision.usage[0]).to.include({ requests: 3, resetMs: 40_000 });
    });

    it('opens a new window a minute after the first request, not on clock minutes', () => {
      const key = [subject('key:a', { rpm: 2 })];
      now = 1_059_000; // one second before a clock minute
      admitted(limiter.decide(request(key)));
      now = 1_061_000; // past the clock minute: still the same window
      admitted(limiter.decide(request(key)));
      expect(refused(limiter.decide(request(key)))).to.equal('requests@0');
      now = 1_059_000 + 60_000;
      const decision = limiter.decide(request(key));
      expect(decision.ok).to.equal(true);
      expect(decision.usage[0]).to.include({ requests: 1, resetMs: 60_000 });
    });

    it('does not count refused requests', () => {
      const key = [subject('key:a', { rpm: 1 })];
      admitted(limiter.decide(request(key)));
      for (let i = 0; i < 5; i++) limiter.decide(request(key));
      expect(limiter.decide(request(key)).usage[0].requests).to.equal(1);
    });

    it('limits an account across its keys and counts a request in neither when one subject refuses', () => {
      const account = subject('account:x', { rpm: 2 });
      admitted(limiter.decide(request([subject('key:a', { rpm: 10 }), account])));
      admitted(limiter.decide(request([subject('key:b', { rpm: 10 }), account])));
      const decision = limiter.decide(request([subject('key:c', { rpm: 10 }), account]));
      expect(refused(decision)).to.equal('requests@1');
      expect(decision.usage[0].requests, 'key:c not counted').to.equal(0);
    });
  });

  describe('tokens per minute', () => {
    it('admits while reservations fit and refuses the one that would exceed the limit', () => {
      const key = [subject('key:a', { tpm: 10_000 })];
      for (let i = 0; i < 2; i++) admitted(limiter.decide(request(key, 4000)));
      expect(refused(limiter.decide(request(key, 4000)))).to.equal('tokens@0');
      admitted(limiter.decide(request(key, 2000)));
      expect(limiter.decide(request(key, 1)).usage[0].tokens).to.equal(10_000);
    });

    it('replaces a reservation by the real usage, in both directions', () => {
      const key = [subject('key:a', { tpm: 10_000 })];
      const first = admitted(limiter.decide(request(key, 4000)));
      const second = admitted(limiter.decide(request(key, 4000)));
      limiter.releaseNow(first, 500);
      expect(limiter.decide(request(key, 0)).usage[0].tokens).to.equal(4500);
      limiter.releaseNow(second, 4200);
      expect(limiter.decide(request(key, 0)).usage[0].tokens).to.equal(4700);
    });

    it('keeps the reservation when the usage is unknown', () => {
      const key = [subject('key:a', { tpm: 10_000 })];
      limiter.releaseNow(admitted(limiter.decide(request(key, 4000))), null);
      expect(limiter.decide(request(key, 0)).usage[0].tokens).to.equal(4000);
    });

    it('leaves a later window alone when a correction arrives after its own window closed', () => {
      const key = [subject('key:a', { tpm: 10_000 })];
      const old = admitted(limiter.decide(request(key, 4000)));
      now += 60_000;
      admitted(limiter.decide(request(key, 3000)));
      limiter.releaseNow(old, 0);
      expect(limiter.decide(request(key, 0)).usage[0].tokens).to.equal(3000);
    });
  });

  describe('concurrency', () => {
    it('refuses past the limit and admits again once a request is released', () => {
      const key = [subject('key:a', { concurrency: 2 })];
      const a = admitted(limiter.decide(request(key)));
      admitted(limiter.decide(request(key)));
      expect(refused(limiter.decide(request(key)))).to.equal('concurrency@0');
      limiter.releaseNow(a, null);
      admitted(limiter.decide(request(key)));
      expect(refused(limiter.decide(request(key)))).to.equal('concurrency@0');
    });

    it('frees every subject the admission took a slot in', () => {
      const account = subject('account:x', { concurrency: 1 });
      const a = admitted(limiter.decide(request([subject('key:a', { concurrency: 1 }), account])));
      expect(refused(limiter.decide(request([subject('key:b', {}), account])))).to.equal('concurrency@1');
      limiter.releaseNow(a, null);
      expect(limiter.size, 'the two windows stay until they close; the in-flight counters are gone').to.equal(2);
      admitted(limiter.decide(request([subject('key:a', { concurrency: 1 }), account])));
    });
  });

  describe('memory', () => {
    it('forgets closed windows and idle subjects, so state stays bounded by recent subjects', () => {
      for (let i = 0; i < 1000; i++) limiter.releaseNow(admitted(limiter.decide(request([subject(`key:${i}`, { rpm: 5 })]))), null);
      expect(limiter.size).to.equal(1000);
      now += 60_000;
      admitted(limiter.decide(request([subject('key:new', { rpm: 5 })])));
      expect(limiter.size).to.equal(1);
    });
  });

  describe('an instance share (Redis outage)', () => {
    it('divides every limit, rounding up, and reports the divided limit', () => {
      expect(shareOf({ rpm: 100, tpm: 10, concurrency: 1 }, 3)).to.deep.equal({ rpm: 34, tpm: 4, concurrency: 1 });
      const shared = new LocalLimiter({ now: () => now, divisor: 2 });
      const key = [subject('key:a', { rpm: 4 })];
      admitted(shared.decide(request(key)));
      admitted(shared.decide(request(key)));
      const decision = shared.decide(request(key));
      expect(refused(decision)).to.equal('requests@0');
      expect(decision.usage[0].limits.rpm).to.equal(2);
    });
  });
});

describe('rate-limit headers', () => {
  const usage = (limits: Partial<RateLimits>, requests: number, tokens: number, resetMs: number) => ({
    limits: { ...NONE, ...limits },
    requests,
    tokens,
    inflight: 0,
    resetMs,
  });

  it('shows the subject with less left, never a negative remainder, and nothing for unlimited dimensions', () => {
    const views = [usage({ rpm: 10 }, 4, 0, 30_000), usage({ rpm: 100, tpm: 50 }, 97, 80, 10_000)];
    expect(viewOf(views, 'requests')).to.deep.equal({ limit: 100, remaining: 3, resetMs: 10_000 });
    expect(viewOf(views, 'tokens')).to.deep.equal({ limit: 50, remaining: 0, resetMs: 10_000 });
    expect(viewOf([usage({ concurrency: 3 }, 1, 1, 1)], 'requests')).to.equal(null);
  });

  it('writes OpenAI durations and Anthropic RFC 3339 instants', () => {
    expect([openaiDuration(250), openaiDuration(1000), openaiDuration(12_345), openaiDuration(60_000)]).to.deep.equal(['250ms', '1s', '12.345s', '1m0s']);
    expect(rfc3339(Date.UTC(2026, 0, 2, 3, 4, 5, 1))).to.equal('2026-01-02T03:04:06Z');
    const views = { requests: { limit: 10, remaining: 9, resetMs: 59_500 }, tokens: null };
    expect(rateLimitHeaders('openai', views)).to.deep.equal({
      'x-ratelimit-limit-requests': '10',
      'x-ratelimit-remaining-requests': '9',
      'x-ratelimit-reset-requests': '59.5s',
    });
    expect(rateLimitHeaders('anthropic', views, Date.UTC(2026, 0, 2, 3, 4, 0))).to.deep.equal({
      'anthropic-ratelimit-requests-limit': '10',
      'anthropic-ratelimit-requests-remaining': '9',
      'anthropic-ratelimit-requests-reset': '2026-01-02T03:05:00Z',
    });
  });
});
