/** Usage of a whole (non-streamed) reply that has already been parsed, in any protocol. */
import { messagesUsage } from './anthropic-messages/usage';
import { chatUsage } from './openai-chat/usage';
import { responsesUsage } from './openai-responses/usage';
import type { EndpointId, Usage } from './types';
import { field } from './usage-json';

export function replyUsage(endpoint: EndpointId, body: unknown): Usage | null {
  const usage = field(body, 'usage');
  if (Object.keys(usage).length === 0) return null;
  switch (endpoint) {
    case 'chat':
      return { ...chatUsage(usage), source: 'upstream' };
    case 'responses':
      return { ...responsesUsage(usage), source: 'upstream' };
    case 'messages':
      return { ...messagesUsage(usage), source: 'upstream' };
    case 'count_tokens':
      return null;
  }
}
