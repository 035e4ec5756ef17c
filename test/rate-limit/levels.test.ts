/**
 * The levels of a request's rate limits (src/rate-limit/levels.ts): which buckets a request counts
 * in, with what limits, and which level a refusal names when more than one is full.
 */
import { expect } from 'chai';
import { parseConfig } from '../../src/config/load';
import type { RateLimitPluginConfig, RateLimits } from '../../src/config/types';
import { levelSubjects, refusingLevel, type LevelSource } from '../../src/rate-limit/levels';
import type { Subject, SubjectUsage } from '../../src/rate-limit/limiter';
import { LocalLimiter } from '../../src/rate-limit/local';

function pluginConfig(rateLimit: string): RateLimitPluginConfig {
  const yaml = `
version: 1
store: { url: "sqlite::memory:" }
providers:
  openai: { protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: k }
models:
  gpt-test: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  rate-limit: ${rateLimit}
`;
  return parseConfig(yaml, 'levels-test.yaml', {}).plugins['rate-limit'];
}

const SOURCE: LevelSource = { keyId: 'key_a', keyLimits: null, accountId: 'acc_org', accountLimits: undefined, memberAccountId: null, memberLimits: undefined };
const NONE: RateLimits = { rpm: 0, tpm: 0, concurrency: 0 };

function usage(limits: Partial<RateLimits>, counters: Partial<Omit<SubjectUsage, 'limits'>> = {}): SubjectUsage {
  return { limits: { ...NONE, ...limits }, requests: 0, tokens: 0, inflight: 0, resetMs: 60_000, ...counters };
}

function subjects(...ids: string[]): Subject[] {
  return ids.map((id) => ({ id, limits: NONE }));
}

describe('rate-limit levels', () => {
  describe('levelSubjects', () => {
    it('limits nobody when no level sets a limit', () => {
      expect(levelSubjects(pluginConfig('{}'), SOURCE)).to.deep.equal([]);
    });

    it("puts the operator's account limits in one account bucket, not in the key's", () => {
      const found = levelSubjects(pluginConfig('{}'), { ...SOURCE, accountLimits: { rpm: 10 } });
      expect(found).to.deep.equal([{ id: 'account:acc_org', limits: { rpm: 10, tpm: 0, concurrency: 0 } }]);
    });

    it('gives every key of an account the same account bucket', () => {
      const config = pluginConfig('{}');
      const ids = ['key_a', 'key_b', 'key_playground'].map((keyId) => levelSubjects(config, { ...SOURCE, keyId, accountLimits: { rpm: 10 } })[0].id);
      expect(new Set(ids)).to.deep.equal(new Set(['account:acc_org']));
    });

    it("tightens gateway.yaml's per-account limits with the operator's stored ones, field by field", () => {
      const found = levelSubjects(pluginConfig('{ per_account: { rpm: 100, tpm: 5000 } }'), { ...SOURCE, accountLimits: { rpm: 10, concurrency: 2 } });
      expect(found).to.deep.equal([{ id: 'account:acc_org', limits: { rpm: 10, tpm: 5000, concurrency: 2 } }]);
    });

    it("keeps a member's limits in a bucket of the member within the organisation, between key and account", () => {
      const found = levelSubjects(pluginConfig('{ per_key: { rpm: 50 } }'), { ...SOURCE, memberAccountId: 'acc_bob', memberLimits: { tpm: 900 }, accountLimits: { rpm: 10 } });
      expect(found.map((subject) => subject.id)).to.deep.equal(['key:key_a', 'member:acc_org:acc_bob', 'account:acc_org']);
      expect(found[1].limits).to.deep.equal({ rpm: 0, tpm: 900, concurrency: 0 });
    });

    it("ignores a member's limits on a key that belongs to no member", () => {
      expect(levelSubjects(pluginConfig('{}'), { ...SOURCE, memberLimits: { rpm: 3 } })).to.deep.equal([]);
    });

    it("keeps the key's own limits per key: gateway.yaml's per_key tightened by the key's stored limits", () => {
      const found = levelSubjects(pluginConfig('{ per_key: { rpm: 50, tpm: 1000 } }'), { ...SOURCE, keyLimits: { rpm: 5 } });
      expect(found).to.deep.equal([{ id: 'key:key_a', limits: { rpm: 5, tpm: 1000, concurrency: 0 } }]);
    });
  });

  describe('refusingLevel', () => {
    const three = subjects('key:key_a', 'member:acc_org:acc_bob', 'account:acc_org');

    it('names the only full bucket', () => {
      const chosen = refusingLevel(three, [usage({ rpm: 5 }, { requests: 1 }), usage({ rpm: 3 }, { requests: 3, resetMs: 20_000 }), usage({ rpm: 10 }, { requests: 3 })], 0, { subject: 1, refused: 'requests' });
      expect(chosen).to.deep.equal({ subject: 1, level: 'member', refused: 'requests', waitMs: 20_000 });
    });

    it('names the bucket that resets last when several are full: the request waits for it', () => {
      const chosen = refusingLevel(three, [usage({ rpm: 2 }, { requests: 2, resetMs: 50_000 }), usage({}), usage({ rpm: 2 }, { requests: 2, resetMs: 10_000 })], 0, { subject: 0, refused: 'requests' });
      expect(chosen).to.include({ level: 'key', waitMs: 50_000 });
    });

    it('names the higher level when two full buckets reset together', () => {
      const chosen = refusingLevel(three, [usage({ rpm: 2 }, { requests: 2 }), usage({ rpm: 2 }, { requests: 2 }), usage({ rpm: 2 }, { requests: 2 })], 0, { subject: 0, refused: 'requests' });
      expect(chosen).to.include({ subject: 2, level: 'account' });
    });

    it('prefers a window to wait out over a concurrency slot that frees when a request ends', () => {
      const chosen = refusingLevel(three, [usage({ concurrency: 1 }, { inflight: 1 }), usage({}), usage({ tpm: 100 }, { tokens: 90, resetMs: 30_000 })], 20, { subject: 0, refused: 'concurrency' });
      expect(chosen).to.include({ level: 'account', refused: 'tokens', waitMs: 30_000 });
    });

    it('names a bucket whose tpm the reservation alone exceeds above any wait: no retry passes it', () => {
      const chosen = refusingLevel(three, [usage({ tpm: 50 }), usage({}), usage({ rpm: 1 }, { requests: 1, resetMs: 59_000 })], 80, { subject: 0, refused: 'tokens' });
      expect(chosen).to.include({ level: 'key', refused: 'tokens', waitMs: Infinity });
    });

    it("keeps the back end's choice should the counters show no bucket full", () => {
      const chosen = refusingLevel(three, [usage({}), usage({}), usage({ concurrency: 4 }, { inflight: 1 })], 0, { subject: 2, refused: 'concurrency' });
      expect(chosen).to.deep.equal({ subject: 2, level: 'account', refused: 'concurrency', waitMs: 1000 });
    });

    it("agrees with a limiter's refused decision: two keys of one account share its bucket", () => {
      const limiter = new LocalLimiter();
      const config = pluginConfig('{ per_key: { rpm: 5 } }');
      const of = (keyId: string) => levelSubjects(config, { ...SOURCE, keyId, accountLimits: { rpm: 3 } });
      const decisions = ['key_a', 'key_b', 'key_a', 'key_b'].map((keyId, i) => ({ subjects: of(keyId), decision: limiter.decide({ requestId: `req_${i}`, subjects: of(keyId), tokens: 0 }) }));
      expect(decisions.map(({ decision }) => decision.ok)).to.deep.equal([true, true, true, false]);
      const last = decisions[3];
      if (last.decision.ok) throw new Error('expected a refusal');
      expect(refusingLevel(last.subjects, last.decision.usage, 0, last.decision)).to.include({ level: 'account', refused: 'requests' });
    });
  });
});
