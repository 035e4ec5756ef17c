/**
 * The input a hold covers is a bound for text in any script: for each kind of text that tokenizes
 * densely (CJK Extension A, astral CJK, Cyrillic, Thai, emoji, and ASCII built to defeat merges), a
 * chat or Messages body is held for at least as many input tokens as o200k and cl100k count in its
 * text, with the chat framing OpenAI adds. Measured figures are in docs/billing.md.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { holdAmount } from '../../src/billing/hold-amount';
import { chatFramingTokens } from '../../src/billing/chat-framing';
import { nanoPrice } from '../../src/billing/prices';
import type { ModelConfig, RateCard } from '../../src/config/types';
import { requestReach } from '../../src/protocols/request-reach';
import type { EndpointId } from '../../src/protocols/types';

type Counter = (text: string) => number;
const o200k = (require('gpt-tokenizer/cjs/encoding/o200k_base') as { countTokens: Counter }).countTokens;
const cl100k = (require('gpt-tokenizer/cjs/encoding/cl100k_base') as { countTokens: Counter }).countTokens;

const CARD: RateCard = { input: 12.5, cache_write: 12.5, cache_write_1h: 12.5, cache_hit: 1.25, output: 10, image_input: 0, image_output: 0, tool_calls: {} };
const MODEL = { id: 'm', kind: 'text', max_output_tokens: 1000, context_window: 1_000_000 } as ModelConfig;

function pick(alphabet: string, length: number): string {
  const bytes = randomBytes(length);
  return Array.from(bytes, (byte) => alphabet[byte % alphabet.length]).join('');
}

/** Texts of about 6 KB that tokenize far denser than prose. */
const TEXTS: Record<string, string> = {
  // The issue's case: 5,969 o200k tokens in a 6,064-byte body.
  'CJK Extension A': Array.from({ length: 2000 }, (_, i) => String.fromCodePoint(0x3400 + ((i * 37) % 6592))).join(''),
  'CJK Extension B (astral)': Array.from({ length: 1500 }, (_, i) => String.fromCodePoint(0x20000 + ((i * 53) % 40000))).join(''),
  Cyrillic: 'Съешь же ещё этих мягких французских булок, да выпей чаю. '.repeat(60),
  Thai: 'เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน '.repeat(50),
  emoji: '😀🎉👍🏽🚀❤️‍🔥🧑‍💻'.repeat(200),
  // One token per byte in o200k and cl100k: a letter and a digit never merge.
  'ASCII letters and digits alternating': 'a1'.repeat(3000),
  'ASCII symbols at random': pick('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', 6000),
  'ASCII printable at random': pick(Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join(''), 6000),
  base64: randomBytes(4500).toString('base64'),
};

function bodyOf(endpoint: EndpointId, text: string): Record<string, unknown> {
  return endpoint === 'chat'
    ? { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: text }] }
    : { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text }] }] };
}

describe('billing/hold-amount: the input held bounds any text', () => {
  for (const endpoint of ['chat', 'messages'] as const) {
    for (const [name, text] of Object.entries(TEXTS)) {
      it(`${endpoint}: ${name}`, () => {
        const body = bodyOf(endpoint, text);
        const raw = Buffer.from(JSON.stringify(body));
        const estimate = holdAmount({ rawBytes: raw.length, reach: requestReach(endpoint, body, raw), referencedTokens: 0, defaultToolUses: 10 }, MODEL, nanoPrice(CARD));
        const framing = endpoint === 'chat' ? chatFramingTokens(body) : 0;
        const counted = Math.max(o200k(text), cl100k(text)) + framing;
        expect(estimate.inputTokens, `${counted} tokens in ${raw.length} bytes`).to.be.at.least(counted);
        // And the money: the hold covers the input charged at the same price, and the one output token.
        const charged = (BigInt(counted) * 12_500n + 10_000n);
        expect(estimate.amount >= charged, `held ${estimate.amount}, charged ${charged}`).to.equal(true);
      });
    }
  }

  it('bounds text sent as JSON escapes too: an escape is never shorter than what it decodes to', () => {
    const text = TEXTS['CJK Extension A'];
    const escaped = `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"${[...text].map((char) => `\\u${char.codePointAt(0)!.toString(16)}`).join('')}"}]}`;
    const body = JSON.parse(escaped) as Record<string, unknown>;
    const raw = Buffer.from(escaped);
    const estimate = holdAmount({ rawBytes: raw.length, reach: requestReach('chat', body, raw), referencedTokens: 0, defaultToolUses: 10 }, MODEL, nanoPrice(CARD));
    expect(estimate.inputTokens).to.be.at.least(o200k(text) + chatFramingTokens(body));
  });
});
