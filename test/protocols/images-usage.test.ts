import { expect } from 'chai';
import { imagesUsage, imagesUsageFromEvent } from '../../src/protocols/openai-images/usage';
import { responsesUsage } from '../../src/protocols/openai-responses/usage';
import { replyUsage } from '../../src/protocols/reply-usage';
import { usageTapFor } from '../../src/protocols/usage-tap';

const USAGE = { input_tokens: 50, input_tokens_details: { text_tokens: 40, image_tokens: 10 }, output_tokens: 272, total_tokens: 322 };

describe('images usage', () => {
  it('splits input into text and image tokens, and counts output as image tokens and the images delivered', () => {
    expect(imagesUsage({ data: [{ b64_json: 'x' }, { b64_json: 'y' }], usage: USAGE })).to.deep.include({
      inputTokens: 40,
      imageInputTokens: 10,
      outputTokens: 0,
      imageOutputTokens: 272,
      images: 2,
    });
  });

  it('prices output text tokens as text when output_tokens_details splits them', () => {
    const usage = { ...USAGE, output_tokens: 300, output_tokens_details: { image_tokens: 272, text_tokens: 28 } };
    expect(imagesUsage({ data: [{}], usage })).to.deep.include({ outputTokens: 28, imageOutputTokens: 272 });
  });

  it('keeps the images of a reply without usage (DALL·E) or with unreadable usage, with no tokens', () => {
    expect(imagesUsage({ data: [{ url: 'u' }] })).to.deep.include({ images: 1, inputTokens: 0, imageOutputTokens: 0 });
    expect(imagesUsage({ data: [{}], usage: { output_tokens: '272' } })).to.deep.include({ images: 1, imageOutputTokens: 0 });
    expect(replyUsage('images', { error: {} })).to.equal(null);
  });

  it('adds up the completed events of a stream, reading usage beside the image without parsing it', () => {
    const completed = (out: number) => JSON.stringify({ type: 'image_generation.completed', b64_json: 'QUJD'.repeat(1000), usage: { ...USAGE, output_tokens: out } });
    let sofar = imagesUsageFromEvent('image_generation.partial_image', JSON.stringify({ type: 'image_generation.partial_image', b64_json: 'QUJD' }), null);
    // A partial image is counted (the provider bills it), with no tokens and no finished image yet.
    expect(sofar).to.deep.include({ partialImages: 1, images: 0, imageOutputTokens: 0 });
    sofar = imagesUsageFromEvent('image_generation.completed', completed(272), sofar);
    sofar = imagesUsageFromEvent(null, completed(1056), sofar);
    expect(sofar).to.deep.include({ inputTokens: 80, imageInputTokens: 20, imageOutputTokens: 1328, images: 2, partialImages: 1 });
    expect(imagesUsageFromEvent(null, JSON.stringify({ type: 'image_generation.partial_image', b64_json: 'QUJD' }), sofar)).to.deep.include({ partialImages: 2, images: 2 });
    expect(imagesUsageFromEvent('image_generation.completed', '{"type":"image_generation.completed","usage":{"output_tokens":', null)).to.equal(null);
  });

  it('reads an image stream through its tap, without counting text', async () => {
    const tap = usageTapFor('images');
    tap.observe(Buffer.from(`event: image_generation.partial_image\ndata: {"type":"image_generation.partial_image","b64_json":"QUJD"}\n\n`));
    tap.observe(Buffer.from(`event: image_generation.completed\ndata: ${JSON.stringify({ type: 'image_generation.completed', b64_json: 'QUJD', usage: USAGE })}\n\n`));
    expect(tap.result()).to.deep.include({ imageOutputTokens: 272, images: 1, source: 'upstream' });
    expect(await tap.outputTokens()).to.equal(0);
  });

  it("adds the Responses image_generation tool's tool_usage as image tokens", () => {
    const response = {
      usage: { input_tokens: 1820, output_tokens: 210 },
      tool_usage: { image_gen: { input_tokens: 30, input_tokens_details: { text_tokens: 30, image_tokens: 0 }, output_tokens: 4160, output_tokens_details: { image_tokens: 4160 } } },
      output: [{ type: 'image_generation_call' }],
    };
    expect(responsesUsage(response)).to.deep.include({ inputTokens: 1850, outputTokens: 210, imageInputTokens: 0, imageOutputTokens: 4160, toolCalls: { image_generation: 1 } });
  });
});
