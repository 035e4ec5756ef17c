/**
 * Images as Anthropic `image` blocks. OpenAI clients send an image as a URL: either `data:` with
 * base64 bytes, or https. Messages takes base64 sources only for the four formats it reads.
 */
import { GatewayError } from '../kernel/errors';

const MEDIA_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

export type AnthropicImageBlock = {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
};

/** The image block for an image URL; `param` names the client's field in errors. */
export function imageBlock(url: string, param: string): AnthropicImageBlock {
  const data = DATA_URL.exec(url);
  if (data !== null) {
    const mediaType = data[1].toLowerCase();
    if (!MEDIA_TYPES.has(mediaType)) {
      throw new GatewayError(
        'TOLLGATE_ERR_REQUEST_INVALID',
        `${param}: images must be JPEG, PNG, GIF or WebP for this model; got ${mediaType}.`,
        { param },
      );
    }
    return { type: 'image', source: { type: 'base64', media_type: mediaType, data: data[2] } };
  }
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', `${param}: an image URL must be a data: URL with base64 data or an http(s) URL.`, { param });
}

/** The URL form of an Anthropic image source, for the reverse direction. */
export function imageUrl(source: Readonly<Record<string, unknown>>): string | null {
  if (source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string') {
    return `data:${source.media_type};base64,${source.data}`;
  }
  if (source.type === 'url' && typeof source.url === 'string') return source.url;
  return null;
}
