/**
 * What image requests hold and are charged beyond their tokens (`src/billing/image-billing.ts`,
 * `hold-amount.ts`): n images at the largest entry the size and quality reach, per-image prices by
 * key, and a price that is per image only still counts as a price.
 */
import { expect } from 'chai';
import { holdAmount } from '../../src/billing/hold-amount';
import { imageCharge, imageTokensPerImage, unreportedToolImages } from '../../src/billing/image-billing';
import { costOf, isFree, nanoPrice } from '../../src/billing/prices';
import { GPT_IMAGE_OUTPUT_TOKENS } from '../../src/config/derive';
import type { ModelConfig, RateCard } from '../../src/config/types';
import type { RequestReach } from '../../src/protocols/request-reach';
import { NO_TOKENS } from '../../src/protocols/types';

const CARD: RateCard = { input: 5, cache_write: 5, cache_write_1h: 5, cache_hit: 1.25, output: 0, image_input: 10, image_output: 40, tool_calls: {} };
const MODEL = { id: 'img', kind: 'image', image_output_tokens: GPT_IMAGE_OUTPUT_TOKENS, max_output_tokens: 4096 } as ModelConfig;

const STREAMED = { model: 'img', prompt: 'a tower', stream: true };

function reach(n: number, size: string | null, quality: string | null): RequestReach {
  return { outputLimit: null, choices: n, responseIds: [], conversationIds: [], unsizedInput: false, toolCalls: {}, image: { size, quality } };
}

describe('image billing', () => {
  it('takes the largest table entry the size and quality reach, all of them when both are open', () => {
    expect(imageTokensPerImage(GPT_IMAGE_OUTPUT_TOKENS, { size: '1024x1024', quality: 'low' })).to.equal(272);
    expect(imageTokensPerImage(GPT_IMAGE_OUTPUT_TOKENS, { size: '1024x1024', quality: null })).to.equal(4160);
    expect(imageTokensPerImage(GPT_IMAGE_OUTPUT_TOKENS, { size: null, quality: 'medium' })).to.equal(1584);
    expect(imageTokensPerImage(GPT_IMAGE_OUTPUT_TOKENS, { size: null, quality: null })).to.equal(6240);
    // A size the table does not list: the provider decides, the hold takes the largest.
    expect(imageTokensPerImage(GPT_IMAGE_OUTPUT_TOKENS, { size: '2048x2048', quality: 'high' })).to.equal(6240);
  });

  it('holds the prompt at the text input price and n images at the image output price', () => {
    const estimate = holdAmount({ rawBytes: 90, reach: reach(4, '1536x1024', 'high'), referencedTokens: 0, defaultToolUses: 10 }, MODEL, nanoPrice(CARD));
    // 90 prompt tokens (one per byte) x 5,000 + 4 x 6,208 x 40,000 nano-units.
    expect(estimate).to.deep.include({ amount: 90n * 5000n + 4n * 6208n * 40_000n, inputTokens: 90, outputTokens: 4 * 6208, images: 4 });
  });

  it('holds a per-image model at its dearest reachable price, and refuses a size it has no price for', () => {
    const price = nanoPrice({ ...CARD, input: 0, cache_write: 0, cache_write_1h: 0, cache_hit: 0, image_input: 0, image_output: 0 }, { '1024x1024/standard': 0.04, '1024x1024/hd': 0.08, '1792x1024/hd': 0.12 });
    expect(isFree(price)).to.equal(false);
    const hold = (size: string | null, quality: string | null) => holdAmount({ rawBytes: 30, reach: reach(2, size, quality), referencedTokens: 0, defaultToolUses: 10 }, MODEL, price).amount;
    expect(hold('1024x1024', null)).to.equal(2n * 80_000_000n);
    expect(hold(null, null)).to.equal(2n * 120_000_000n);
    expect(hold('1024x1024', 'standard')).to.equal(2n * 40_000_000n);
    expect(() => hold('512x512', null)).to.throw("no price for 512x512/any quality images");
  });

  it('charges images at the key they name, exactly, besides their tokens', () => {
    const price = nanoPrice(CARD, { '1024x1024/standard': 0.04 });
    const usage = { ...NO_TOKENS, inputTokens: 3, images: 3, imageKey: '1024x1024/standard' };
    expect(costOf(usage, price)).to.equal(3n * 5000n + 3n * 40_000_000n);
    expect(costOf({ ...usage, imageKey: null }, price)).to.equal(3n * 5000n);
  });

  it('charges each Responses image call shown without usage its image at the one-image estimate: in full when it came, else as a floor', () => {
    const tokens = {
      ...NO_TOKENS,
      toolCalls: {},
      imageOutputTokens: 0,
      partialImages: 5,
      imageCalls: { done: { partials: 2, finished: true }, cut: { partials: 3, finished: false }, bare: { partials: 0, finished: false } },
    };
    // 1024x1024 low is 272: the finished call 272 + 200, the cut one's 300 partial tokens over 272, the bare one 272.
    const low = unreportedToolImages({ tokens, source: 'estimated' }, { size: '1024x1024', quality: 'low' });
    expect(low).to.deep.include({ source: 'partial' });
    expect(low.tokens.imageOutputTokens).to.equal(272 + 200 + 300 + 272);
    // No size or quality named: the largest entry, as /v1/images estimates one.
    expect(unreportedToolImages({ tokens, source: 'partial' }, undefined).tokens.imageOutputTokens).to.equal(6240 + 200 + 6240 + 6240);
    // Usage that came counts every call itself.
    const reported = { tokens: { ...tokens, imageOutputTokens: 1784 }, source: 'upstream' as const };
    expect(unreportedToolImages(reported, undefined)).to.equal(reported);
  });

  it('charges an unfinished stream each partial image at 100 image output tokens when they pass its hold', async () => {
    // Held: one low 1024x1024 image (272) with no partial images asked; the upstream streamed five anyway.
    const hold = { inputTokens: 40, outputTokens: 272, images: 1 };
    const tokens = { ...NO_TOKENS, toolCalls: {}, images: 0, partialImages: 5 };
    const { billed } = await imageCharge({ tokens, source: 'upstream' }, nanoPrice(CARD), MODEL, { size: '1024x1024', quality: 'low', partials: 0 }, STREAMED, hold);
    expect(billed.source).to.equal('partial');
    expect(billed.tokens).to.deep.include({ inputTokens: 40, imageOutputTokens: 500 });
  });

  it('charges an unfinished stream of two images the completed one as reported, and at least its hold', async () => {
    // Two 1024x1024 medium images with two partials each: held 2 x (1,056 + 200); the first completed (its
    // usage counts its partials), the second streamed its two partials and was cut.
    const hold = { inputTokens: 40, outputTokens: 2 * 1256, images: 2 };
    const tokens = { ...NO_TOKENS, toolCalls: {}, inputTokens: 12, imageOutputTokens: 1256, images: 1, partialImages: 4 };
    const ask = { size: '1024x1024', quality: 'medium', partials: 2 };
    const { billed } = await imageCharge({ tokens, source: 'partial' }, nanoPrice(CARD), MODEL, ask, STREAMED, hold);
    expect(billed).to.deep.equal({ source: 'partial', tokens: { ...tokens, inputTokens: 40, imageOutputTokens: 2 * 1256 } });
    // Finished, the reply's usage is the bill as it stands.
    const finished = { ...tokens, images: 2, imageOutputTokens: 2 * 1256 };
    expect((await imageCharge({ tokens: finished, source: 'upstream' }, nanoPrice(CARD), MODEL, ask, STREAMED, hold)).billed).to.deep.equal({ source: 'upstream', tokens: finished });
  });
});
