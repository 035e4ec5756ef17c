/**
 * Anthropic models on Google Vertex AI: `rawPredict` and `streamRawPredict` (Anthropic SSE) under the
 * project's publisher path, OAuth2 access tokens from a service account or application default credentials,
 * token counting through `count-tokens:rawPredict`. The body is Anthropic's with the model moved into the URL
 * and `anthropic_version` added (routing, docs/decisions.md#d2-native-requests-pass-through); `stream` stays
 * in it, as Anthropic's Vertex SDK sends it.
 * https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude
 */
import type { EndpointId } from '../protocols/types';
import { vertexErrorReply } from '../providers/vertex/errors';
import { vertexAuthenticator } from '../providers/vertex/token-source';
import { HttpUpstreamClient } from '../upstream/http-client';
import { isMessagesErrorEvent, SSE_FRAMING, unchangedReply } from './sse-framing';
import type { UpstreamCall, WireProtocol } from './types';

const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** Counting keeps the model in the body (its path names no model); generation moves it into the URL. */
function vertexBody(endpoint: EndpointId, body: Readonly<Record<string, unknown>>, upstreamModel: string): Buffer {
  const { model: _model, ...rest } = body;
  const out = endpoint === 'count_tokens' ? { ...rest, model: upstreamModel } : rest;
  return Buffer.from(JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...out }));
}

function vertexPath(call: UpstreamCall, projectId: string, region: string): string {
  const models = `/v1/projects/${encodeURIComponent(projectId)}/locations/${encodeURIComponent(region)}/publishers/anthropic/models`;
  if (call.endpoint === 'count_tokens') return `${models}/count-tokens:rawPredict`;
  return `${models}/${encodeURIComponent(call.upstreamModel)}:${call.stream ? 'streamRawPredict' : 'rawPredict'}`;
}

export const VERTEX_WIRE: WireProtocol = {
  displayName: 'Google Vertex AI',
  family: 'anthropic',
  nativeEndpoints: ['messages', 'count_tokens'],
  address: 'derived',
  settings: { accepted: ['region', 'project_id', 'credentials_file'], required: ['region', 'project_id'] },
  defaultBaseUrl: (provider) => (provider.region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${provider.region}-aiplatform.googleapis.com`),
  // A key file or application default credentials are only consulted when a request is sent.
  hasCredentials: () => true,
  path: (call, provider) => vertexPath(call, provider.project_id, provider.region),
  nativeBody: ({ request, endpoint, upstreamModel }) => vertexBody(endpoint, request.body, upstreamModel),
  translatedBody: (body, call) => vertexBody(call.endpoint, body, call.upstreamModel),
  protocolHeaders: () => ({}),
  createClient: (provider) => new HttpUpstreamClient(provider, vertexAuthenticator(provider)),
  framing: SSE_FRAMING,
  isErrorEvent: isMessagesErrorEvent,
  errorReply: vertexErrorReply,
  plainReply: unchangedReply,
  toolNameLimit: 128,
};
