/** The built-in demo provider: answers every endpoint in process, needs no address and no key. */
import { EchoClient } from '../providers/echo';
import { isMessagesErrorEvent, isOpenAIErrorEvent, jsonBody, renamedBody, SSE_FRAMING, unchangedError, unchangedReply } from './sse-framing';
import type { WireProtocol } from './types';

export const ECHO_WIRE: WireProtocol = {
  displayName: 'echo',
  family: null,
  nativeEndpoints: ['chat', 'responses', 'messages', 'count_tokens'],
  address: 'none',
  settings: { accepted: [], required: [] },
  defaultBaseUrl: () => '',
  hasCredentials: () => true,
  // The echo client reads the endpoint, not the path; the paths are the native ones for its logs.
  path: (call) => ({ chat: '/chat/completions', responses: '/responses', messages: '/v1/messages', count_tokens: '/v1/messages/count_tokens', images: '/images/generations' })[call.endpoint],
  nativeBody: renamedBody,
  translatedBody: jsonBody,
  protocolHeaders: () => ({}),
  createClient: (provider) => new EchoClient(provider),
  framing: SSE_FRAMING,
  // It answers in whichever protocol it was asked in.
  isErrorEvent: (event) => isMessagesErrorEvent(event) || isOpenAIErrorEvent(event),
  errorReply: unchangedError,
  plainReply: unchangedReply,
  toolNameLimit: 128,
};
