/** Partial billing without bias: what a cut stream is billed, and the framing an estimated chat input counts. */
import { expect } from 'chai';
import { chatFramingTokens } from '../../src/billing/chat-framing';
import { billedTokens } from '../../src/billing/settlement';
import { countTokensAsync } from '../../src/billing/tokenizer';
import type { ExchangeEnd, ExchangeOutcome } from '../../src/kernel/context';
import { NO_TOKENS, type Usage } from '../../src/protocols/types';
import { requestText } from '../../src/protocols/request-text';
import { slicedCount } from '../helpers/o200k';

function outcome(end: ExchangeEnd, usage: Usage | null, text: string): ExchangeOutcome {
  return {
    end,
    status: 200,
    provider: 'test',
    upstreamModel: 'test-model',
    attempts: 1,
    attemptLog: [],
    committedAt: 0,
    upstreamRequestId: null,
    usage,
    outputTokens: () => countTokensAsync(text),
    replyId: null,
  };
}

const body = { model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', name: 'ann', content: 'Say hello to the world.' }] };

describe('billing/settlement: partial billing', () => {
  it('bills a stream cut before any content its input only, whatever the early usage said', async () => {
    // Anthropic's message_start carries output_tokens 1 before any text exists.
    const early: Usage = { ...NO_TOKENS, inputTokens: 42, outputTokens: 1, toolCalls: {}, source: 'partial' };
    const billed = await billedTokens(outcome({ kind: 'aborted' }, early, ''), body, 'messages');
    expect(billed.source).to.equal('partial');
    expect(billed.tokens.inputTokens).to.equal(42);
    expect(billed.tokens.outputTokens).to.equal(0);
  });

  it('still bills the output relayed before the cut, and the upstream count when it is larger', async () => {
    const usage: Usage = { ...NO_TOKENS, inputTokens: 42, outputTokens: 30, toolCalls: {}, source: 'partial' };
    const billed = await billedTokens(outcome({ kind: 'aborted' }, usage, 'Hello there'), body, 'messages');
    expect(billed.tokens.outputTokens).to.equal(30);
    const counted = await billedTokens(outcome({ kind: 'aborted' }, null, 'Hello there, world'), body, 'chat');
    expect(counted.tokens.outputTokens).to.equal(slicedCount('Hello there, world'));
  });

  it('adds OpenAI chat framing to an estimated chat input: 3 per message, 1 per name, 3 for the reply', async () => {
    expect(chatFramingTokens(body)).to.equal(3 + 3 + 1 + 3);
    expect(chatFramingTokens({ messages: [] })).to.equal(0);
    expect(chatFramingTokens({ input: 'x' })).to.equal(0);
    const text = slicedCount(requestText(body));
    expect((await billedTokens(outcome({ kind: 'aborted' }, null, 'Hi'), body, 'chat')).tokens.inputTokens).to.equal(text + 10);
    expect((await billedTokens(outcome({ kind: 'delivered' }, null, 'Hi'), body, 'chat')).tokens.inputTokens).to.equal(text + 10);
    // Other protocols frame differently; their estimate stays the text alone.
    expect((await billedTokens(outcome({ kind: 'aborted' }, null, 'Hi'), body, 'messages')).tokens.inputTokens).to.equal(text);
  });
});
