/** Usage of a whole (non-streamed) reply that has already been parsed, in any protocol. */
import { messagesUsage } from './anthropic-messages/usage';
import { chatUsage } from './openai-chat/usage';
import { responsesUsage } from './openai-responses/usage';
import type { EndpointId, Usage, UsageCounts } from './types';
import { field } from './usage-json';
import { imagesUsage } from './openai-images/usage';
import { object } from '../json';

/** The reply's usage; null when it reported none, or none that could be read (billing then counts). */
export function replyUsage(endpoint: EndpointId, body: unknown): Usage | null {
  // An image reply's images are billed even without usage (a per-image model reports none).
  if (endpoint === 'images') {
    const counts = imagesUsage(object(body));
    return counts === null ? null : upstreamUsage(counts);
  }
  const usage = field(body, 'usage');
  if (Object.keys(usage).length === 0) return null;
  const counts = countsOf(endpoint, body, usage);
  return counts === null ? null : upstreamUsage(counts);
}

function upstreamUsage(counts: UsageCounts): Usage {
  // Object.assign, not `{ ...counts, source }`: V8 copies a spread followed by more properties on a slow
  // path, ten times dearer than this copy (docs/benchmarks.md, the CPU cuts).
  return Object.assign({}, counts, { source: 'upstream' as const });
}

function countsOf(endpoint: EndpointId, body: unknown, usage: Record<string, unknown>): UsageCounts | null {
  switch (endpoint) {
    case 'chat':
      return chatUsage(usage, (body as Record<string, unknown>).service_tier);
    case 'responses':
      return responsesUsage(body as Record<string, unknown>);
    case 'messages':
      return messagesUsage(usage);
    case 'count_tokens':
    case 'images':
      return null;
  }
}

/** The id of a whole reply (a Responses `resp_…`), for requests that may reference it later. */
export function replyId(endpoint: EndpointId, body: unknown): string | null {
  if (endpoint !== 'responses' || body === null || typeof body !== 'object') return null;
  const id = (body as Record<string, unknown>).id;
  return typeof id === 'string' ? id : null;
}
