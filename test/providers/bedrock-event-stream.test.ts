/** Reading Bedrock's event-stream into Anthropic events, whatever the read boundaries. */
import { expect } from 'chai';
import { BedrockEventStreamParser } from '../../src/providers/bedrock/event-stream';
import { chunkMessage, exceptionMessage } from '../helpers/fake-bedrock';

const EVENTS = [
  { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 5, output_tokens: 1 } } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } },
  { type: 'message_stop' },
];

describe('providers/bedrock BedrockEventStreamParser', () => {
  it('yields each chunk\'s Anthropic event, named by its type, however the bytes are split', () => {
    const bytes = Buffer.concat(EVENTS.map((event) => chunkMessage(event)));
    for (const step of [1, 7, 64, bytes.length]) {
      const parser = new BedrockEventStreamParser();
      const events = [];
      for (let at = 0; at < bytes.length; at += step) events.push(...parser.push(bytes.subarray(at, at + step)));
      expect(events.map((event) => event.event), `step ${step}`).to.deep.equal(['message_start', 'content_block_delta', 'message_stop']);
      expect(JSON.parse(events[1].data)).to.deep.equal(EVENTS[1]);
    }
  });

  it('turns an exception message into an Anthropic error event', () => {
    const [event] = new BedrockEventStreamParser().push(Buffer.from(exceptionMessage('throttlingException', 'Slow down.')));
    expect(event.event).to.equal('error');
    expect(JSON.parse(event.data)).to.deep.equal({ type: 'error', error: { type: 'rate_limit_error', message: 'Slow down.' } });
  });

  it('ends with one api_error event on a corrupt message, never a throw', () => {
    const bytes = Buffer.from(chunkMessage(EVENTS[1]));
    bytes[bytes.length - 1] ^= 0xff; // break the message CRC
    const parser = new BedrockEventStreamParser();
    const events = parser.push(bytes);
    expect(events).to.have.length(1);
    expect(JSON.parse(events[0].data).error.type).to.equal('api_error');
    expect(parser.push(Buffer.from(chunkMessage(EVENTS[2])))).to.deep.equal([]);
  });
});
