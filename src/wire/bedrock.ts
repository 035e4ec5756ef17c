/**
 * Anthropic models on AWS Bedrock: InvokeModel and InvokeModelWithResponseStream under
 * `/model/{id}/…`, SigV4-signed, streams in AWS event-stream framing re-read as Anthropic events,
 * token counting through CountTokens. Serves Messages clients natively and, through the
 * translators, chat and Responses clients.
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html
 */
import { bedrockBody, countTokensReply } from '../providers/bedrock/body';
import { bedrockErrorReply } from '../providers/bedrock/errors';
import { BedrockEventStreamParser } from '../providers/bedrock/event-stream';
import { bedrockSigner } from '../providers/bedrock/signer';
import { HttpUpstreamClient } from '../upstream/http-client';
import { isMessagesErrorEvent } from './sse-framing';
import type { WireProtocol } from './types';

function action(endpoint: string, stream: boolean): string {
  if (endpoint === 'count_tokens') return 'count-tokens';
  return stream ? 'invoke-with-response-stream' : 'invoke';
}

export const BEDROCK_WIRE: WireProtocol = {
  displayName: 'AWS Bedrock',
  family: 'anthropic',
  nativeEndpoints: ['messages', 'count_tokens'],
  address: 'derived',
  settings: { accepted: ['region', 'access_key_id', 'secret_access_key', 'session_token'], required: ['region'] },
  defaultBaseUrl: (provider) => `https://bedrock-runtime.${provider.region}.amazonaws.com`,
  // The default credential chain is only consulted when a request is signed.
  hasCredentials: () => true,
  path: (call) => `/model/${encodeURIComponent(call.upstreamModel)}/${action(call.endpoint, call.stream)}`,
  nativeBody: ({ request, endpoint, clientHeaders }) => bedrockBody(endpoint, request.body, clientHeaders),
  translatedBody: (body, call) => bedrockBody(call.endpoint, body, {}),
  // `accept` names the body type of the reply (a client's `text/event-stream` would be refused).
  protocolHeaders: () => ({ accept: 'application/json' }),
  createClient: (provider) => new HttpUpstreamClient(provider, bedrockSigner(provider)),
  framing: {
    isStream: (headers) => String(headers['content-type'] ?? '').startsWith('application/vnd.amazon.eventstream'),
    newParser: (maxEventBytes) => new BedrockEventStreamParser(maxEventBytes),
    passthrough: false,
  },
  isErrorEvent: isMessagesErrorEvent,
  errorReply: bedrockErrorReply,
  plainReply: (endpoint, body) => (endpoint === 'count_tokens' ? countTokensReply(body) : body),
  toolNameLimit: 128,
};
