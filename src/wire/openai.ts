/** The OpenAI API (Chat Completions and Responses; Bearer key; SSE). */
import { HttpUpstreamClient } from '../upstream/http-client';
import { hasApiKey, isOpenAIErrorEvent, jsonBody, renamedBody, SSE_FRAMING, unchangedError, unchangedReply } from './sse-framing';
import type { WireProtocol } from './types';

type OpenAIEndpoint = 'chat' | 'responses' | 'images';

const OPENAI_PATHS: Readonly<Record<OpenAIEndpoint, string>> = {
  chat: '/chat/completions',
  responses: '/responses',
  images: '/images/generations',
};

export const OPENAI_WIRE: WireProtocol = {
  displayName: 'OpenAI',
  family: 'openai',
  nativeEndpoints: ['chat', 'responses', 'images'],
  address: 'required',
  settings: { accepted: ['api_key', 'auth_header'], required: [] },
  defaultBaseUrl: () => '',
  hasCredentials: hasApiKey,
  // base_url carries the version path (`https://api.openai.com/v1`; Azure's v1 API: `…/openai/v1`).
  path: (call) => OPENAI_PATHS[call.endpoint as OpenAIEndpoint] ?? '/chat/completions',
  nativeBody: renamedBody,
  translatedBody: jsonBody,
  protocolHeaders: () => ({}),
  createClient: (provider) =>
    new HttpUpstreamClient(provider, {
      authenticate(request) {
        // Azure OpenAI takes its key as `api-key` (its v1 API also serves the OpenAI paths).
        if (provider.auth_header === 'api-key') request.headers['api-key'] = provider.api_key;
        else request.headers.authorization = `Bearer ${provider.api_key}`;
      },
    }),
  framing: SSE_FRAMING,
  isErrorEvent: isOpenAIErrorEvent,
  errorReply: unchangedError,
  plainReply: unchangedReply,
  toolNameLimit: 64,
};
