/**
 * Money and prices: exact decimal parsing, the one rounding per request, and the cost of each token
 * kind at each price row of the default gateway.yaml (the spec's table for the claude-* models).
 */
import { expect } from 'chai';
import path from 'node:path';
import { divideHalfUp, formatUnits, unitsToNano } from '../../src/billing/money';
import { costOf, dearestInputPrice, type NanoPrice } from '../../src/billing/prices';
import { rateTable } from '../../src/billing/service-levels';
import { inputTotal } from '../../src/protocols/types';
import { loadConfigFile } from '../../src/config/load';
import { PACKAGE_ROOT } from '../../src/paths';

const MILLION = { inputTokens: 1_000_000, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 0, imageInputTokens: 0, imageOutputTokens: 0 };

describe('billing/money', () => {
  it('parses decimal amounts into exact nano-units', () => {
    expect(unitsToNano('1')).to.equal(1_000_000_000n);
    expect(unitsToNano(0.63)).to.equal(630_000_000n);
    expect(unitsToNano(0.008)).to.equal(8_000_000n);
    expect(unitsToNano('12.345678901')).to.equal(12_345_678_901n);
    expect(unitsToNano(1e-7)).to.equal(100n);
    expect(unitsToNano('-2.5')).to.equal(-2_500_000_000n);
  });

  it('refuses amounts it cannot represent exactly', () => {
    expect(() => unitsToNano('0.0000000001')).to.throw(/more than 9 decimal places/);
    expect(() => unitsToNano('1e3')).to.throw(/not a decimal amount/);
    expect(() => unitsToNano(Number.NaN)).to.throw(/not a finite amount/);
  });

  it('formats nano-units back without trailing zeros', () => {
    expect(formatUnits(350_000n)).to.equal('0.00035');
    expect(formatUnits(3_000_000_000n)).to.equal('3');
    expect(formatUnits(8n)).to.equal('0.000000008');
    expect(formatUnits(-1_500_000_000n)).to.equal('-1.5');
  });

  it('divides rounding half up', () => {
    expect(divideHalfUp(1_499_999n, 1_000_000n)).to.equal(1n);
    expect(divideHalfUp(1_500_000n, 1_000_000n)).to.equal(2n);
    expect(divideHalfUp(2_500_000n, 1_000_000n)).to.equal(3n);
    expect(divideHalfUp(0n, 1_000_000n)).to.equal(0n);
  });
});

describe('billing/prices', () => {
  const config = loadConfigFile(path.join(PACKAGE_ROOT, 'gateway.yaml'), { ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k' });
  /** Each model's standard rates. */
  const table = new Map([...rateTable(config)].map(([id, rates]) => [id, rates.standard.card]));

  /**
   * The seed prices (docs/decisions.md#d9-prices-per-million-tokens-money-exact), per 1M tokens: input, cache
   * write, cache hit, output.
   */
  const SPEC: Record<string, [string, string, string, string]> = {
    'claude-fable-5': ['1.00', '1.25', '0.10', '5.00'],
    'claude-opus-4-8': ['0.50', '0.63', '0.05', '2.50'],
    'claude-sonnet-5': ['0.30', '0.38', '0.03', '1.50'],
    'claude-haiku-4-5-20251001': ['0.08', '0.10', '0.008', '0.40'],
  };

  for (const [model, [input, cacheWrite, cacheHit, output]] of Object.entries(SPEC)) {
    it(`${model}: one million tokens of each kind cost exactly its price`, () => {
      const price = table.get(model)!;
      expect(costOf(MILLION, price), 'input').to.equal(unitsToNano(input));
      expect(costOf({ ...MILLION, inputTokens: 0, cacheWriteTokens: 1_000_000, cacheWrite1hTokens: 0 }, price), 'cache write').to.equal(unitsToNano(cacheWrite));
      expect(costOf({ ...MILLION, inputTokens: 0, cacheReadTokens: 1_000_000 }, price), 'cache hit').to.equal(unitsToNano(cacheHit));
      expect(costOf({ ...MILLION, inputTokens: 0, outputTokens: 1_000_000 }, price), 'output').to.equal(unitsToNano(output));
    });
  }

  it('holds input at the dearest input-side price, whichever kind it is, and never at the output price', () => {
    const tokens = { inputTokens: 3n, cacheWriteTokens: 4n, cacheWrite1hTokens: 6n, cacheReadTokens: 1n, outputTokens: 15n, imageInputTokens: 0n, imageOutputTokens: 0n };
    expect(dearestInputPrice({ tokens, toolCalls: {}, perImage: {} })).to.equal(6n);
    expect(dearestInputPrice({ tokens: { ...tokens, cacheReadTokens: 9n }, toolCalls: {}, perImage: {} })).to.equal(9n);
    expect(dearestInputPrice({ tokens: { ...tokens, inputTokens: 10n }, toolCalls: {}, perImage: {} })).to.equal(10n);
  });

  it('counts every input-side kind as input tokens, and output apart', () => {
    expect(inputTotal({ inputTokens: 1, cacheWriteTokens: 20, cacheWrite1hTokens: 300, cacheReadTokens: 4000, outputTokens: 50_000, imageInputTokens: 0, imageOutputTokens: 0 })).to.equal(4321);
  });

  it('sums the kinds before rounding once, half up', () => {
    // 1,000 nano-units per 1M tokens: a token costs a thousandth of a nano-unit.
    const tiny: NanoPrice = {
      tokens: { inputTokens: 1000n, cacheWriteTokens: 1000n, cacheWrite1hTokens: 1000n, cacheReadTokens: 1000n, outputTokens: 1000n, imageInputTokens: 0n, imageOutputTokens: 0n },
      toolCalls: {},
      perImage: {},
    };
    expect(costOf({ inputTokens: 499, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 0, imageInputTokens: 0, imageOutputTokens: 0 }, tiny)).to.equal(0n);
    expect(costOf({ inputTokens: 500, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 0, imageInputTokens: 0, imageOutputTokens: 0 }, tiny)).to.equal(1n);
    // 400 input tokens and 400 cache hits are 0.4 nano-units each, 0 alone; together 0.8, so 1.
    expect(costOf({ inputTokens: 400, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 0, imageInputTokens: 0, imageOutputTokens: 0 }, tiny)).to.equal(0n);
    expect(costOf({ inputTokens: 400, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 400, outputTokens: 0, imageInputTokens: 0, imageOutputTokens: 0 }, tiny)).to.equal(1n);
  });

  it('charges a typical mixed request to the nano-unit', () => {
    const sonnet = table.get('claude-sonnet-5')!;
    // 1,234 input × 300 + 5,000 writes × 380 + 20,000 hits × 30 + 567 output × 1,500 (nano per 1k tokens).
    const cost = costOf({ inputTokens: 1234, cacheWriteTokens: 5000, cacheWrite1hTokens: 0, cacheReadTokens: 20000, outputTokens: 567, imageInputTokens: 0, imageOutputTokens: 0 }, sonnet);
    expect(cost).to.equal(divideHalfUp(1234n * 300_000_000n + 5000n * 380_000_000n + 20000n * 30_000_000n + 567n * 1_500_000_000n, 1_000_000n));
    expect(cost).to.equal(3_720_700n);
  });

  it('makes free models cost nothing', () => {
    expect(costOf({ inputTokens: 10 ** 9, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 10 ** 9, imageInputTokens: 0, imageOutputTokens: 0 }, table.get('tollgate-echo')!)).to.equal(0n);
  });
});
