/** The Anthropic Messages API (`x-api-key`, `/v1/messages`, SSE). */
import { HttpUpstreamClient } from '../upstream/http-client';
import { hasApiKey, isMessagesErrorEvent, jsonBody, renamedBody, SSE_FRAMING, unchangedError, unchangedReply } from './sse-framing';
import type { WireProtocol } from './types';

export const ANTHROPIC_WIRE: WireProtocol = {
  displayName: 'Anthropic Messages',
  family: 'anthropic',
  nativeEndpoints: ['messages', 'count_tokens'],
  address: 'required',
  settings: { accepted: ['api_key'], required: [] },
  defaultBaseUrl: () => '',
  hasCredentials: hasApiKey,
  path(call) {
    const path = call.endpoint === 'count_tokens' ? '/v1/messages/count_tokens' : '/v1/messages';
    // Only `beta=true` is forwarded: the Messages API reads it; anything else a client appends stays here.
    return call.beta ? `${path}?beta=true` : path;
  },
  nativeBody: renamedBody,
  translatedBody: jsonBody,
  // Native requests keep the client's version (docs/decisions.md#d6-anthropic-version-is-the-clients);
  // translated ones get the provider's (docs/decisions.md#d14-a-translated-request-names-its-own-version).
  protocolHeaders(provider, native): Record<string, string> {
    return native ? {} : { 'anthropic-version': provider.anthropic_version };
  },
  createClient: (provider) =>
    new HttpUpstreamClient(provider, {
      authenticate(request) {
        request.headers['x-api-key'] = provider.api_key;
      },
    }),
  framing: SSE_FRAMING,
  isErrorEvent: isMessagesErrorEvent,
  errorReply: unchangedError,
  plainReply: unchangedReply,
  toolNameLimit: 128,
};
