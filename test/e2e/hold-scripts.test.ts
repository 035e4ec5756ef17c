/**
 * Holds cover what text in any script is charged, end to end: the fake upstream reports the real
 * o200k count of each prompt (plus the chat framing), as OpenAI would, and the charge never exceeds the
 * hold. Three concurrent CJK Extension A requests then cannot take a balance below zero, a key past its
 * spend limit, nor a budget past its amount: the bound is zero, since every admitted request held at
 * least its charge. (With one token held per three bytes the first case was charged three times its
 * hold, and the others overdrew by about 0.12.)
 */
import { expect } from 'chai';
import { chatFramingTokens } from '../../src/billing/chat-framing';
import { periodAt } from '../../src/billing/budget-period';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { encoderCount } from '../helpers/o200k';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';

/** The figures: 12.5 per 1M tokens in, 10 out; about 6 KB of CJK Extension A is 0.0746 of input. */
function yaml(upstreamUrl: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 12.5, output: 10 }, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
  upstream: { failover: { max_attempts: 1 } }
`;
}

const TEXTS: Record<string, string> = {
  'CJK Extension A': Array.from({ length: 2021 }, (_, i) => String.fromCodePoint(0x3400 + ((i * 37) % 6592))).join(''),
  Cyrillic: 'Съешь же ещё этих мягких французских булок, да выпей чаю. '.repeat(60),
  Thai: 'เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน '.repeat(50),
  emoji: '😀🎉👍🏽🚀❤️‍🔥🧑‍💻'.repeat(200),
  'ASCII letters and digits alternating': 'a1'.repeat(3000),
};

function bodyOf(text: string): { raw: string; inputTokens: number } {
  const body = { model: 'gpt-priced', max_tokens: 1, messages: [{ role: 'user', content: text }] };
  return { raw: JSON.stringify(body), inputTokens: encoderCount(text) + chatFramingTokens(body) };
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('e2e: holds cover dense scripts', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  beforeEach(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yaml(fake.url) });
  });

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  function post(key: string, raw: string): Promise<number> {
    return fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: raw }).then(async (res) => {
      await res.arrayBuffer();
      return res.status;
    });
  }

  /** Three requests at once with a CJK Extension A body, each answered with its real input count; the charges once settled. */
  async function threeAtOnce(accountId: string, key: string): Promise<ChargeRecord[]> {
    const { raw, inputTokens } = bodyOf(TEXTS['CJK Extension A']);
    for (let i = 0; i < 3; i++) fake.enqueue(chatCompletion({ text: '好', inputTokens, outputTokens: 1 }));
    const statuses = await Promise.all([0, 1, 2].map(() => post(key, raw)));
    const admitted = statuses.filter((status) => status === 200).length;
    expect(statuses.filter((status) => status !== 200 && status !== 402), 'only answers and 402s').to.deep.equal([]);
    const charges = await waitFor(() => tg.store.listCharges({ accountId, limit: 100 }), (list) => list.length >= admitted);
    await waitFor(() => tg.store.balance(accountId), (balance) => balance.held === 0n);
    return charges;
  }

  for (const [name, text] of Object.entries(TEXTS)) {
    it(`holds a ${name} prompt for at least what it is charged`, async () => {
      await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
      const { raw, inputTokens } = bodyOf(text);
      fake.enqueue(chatCompletion({ text: 'ok', inputTokens, outputTokens: 1 }));
      expect(await post(tg.key, raw)).to.equal(200);
      const [charge] = await waitFor(() => tg.store.listCharges({ accountId: tg.accountId, limit: 10 }), (list) => list.length === 1);
      expect(charge.inputTokens).to.equal(inputTokens);
      expect(charge.held >= charge.cost, `held ${charge.held}, charged ${charge.cost}`).to.equal(true);
      expect(charge.overage).to.equal(0n);
    });
  }

  it('never takes a balance below zero with concurrent CJK Extension A requests (the issue: 0.1 went to -0.1237)', async () => {
    const account = await tg.store.createAccount({ name: 'cjk-balance', role: 'user' });
    await tg.store.credit({ accountId: account.id, amount: unitsToNano('0.1'), kind: 'admin', actor: 'test', note: null });
    const { key } = await tg.createKey({ accountId: account.id });
    const charges = await threeAtOnce(account.id, key);
    expect(charges.length, 'at least one fits').to.be.at.least(1);
    for (const charge of charges) expect(charge.overage).to.equal(0n);
    const { balance } = await tg.store.balance(account.id);
    expect(balance >= 0n, `balance ${balance}`).to.equal(true);
  });

  it("never takes a key past its spend limit (the issue: a limit of 0.05 spent 0.0746 in one request)", async () => {
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
    const limited = await tg.createKey();
    await tg.store.setKeyLimits(limited.id, { spendLimit: unitsToNano('0.05') });
    await threeAtOnce(tg.accountId, limited.key);
    const spend = await tg.store.keySpend(limited.id);
    expect(spend !== null && spend.spent <= unitsToNano('0.05'), `spent ${spend?.spent}`).to.equal(true);
  });

  it("never takes a key's daily budget past its amount", async () => {
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
    const budgeted = await tg.createKey();
    await tg.store.setKeyLimits(budgeted.id, { budget: { amount: unitsToNano('0.1'), period: 'day', timezone: 'UTC' } });
    const charges = await threeAtOnce(tg.accountId, budgeted.key);
    expect(charges.length, 'at least one fits').to.be.at.least(1);
    const { start, end } = periodAt(new Date(), 'day', 'UTC');
    const spent = await tg.store.periodSpend('key', budgeted.id, start, end);
    expect(spent <= unitsToNano('0.1'), `spent ${spent}`).to.equal(true);
  });
});
