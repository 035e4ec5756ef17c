import { expect } from 'chai';
import { GatewayError } from '../../src/kernel/errors';
import { expandedInput } from '../../src/translators/responses-to-messages/expanded-input';
import { MINTED_TTL_MS, MintedResponses, mintedResponses } from '../../src/translators/responses-to-messages/minted';

describe('translators/responses-to-messages: minted responses', () => {
  it('forgets a response after its time and the oldest beyond the bound', () => {
    let now = 1_000;
    const minted = new MintedResponses(() => now);
    minted.remember('resp_a', [{ type: 'message', id: 'msg_a', role: 'assistant', content: [] }]);
    expect(minted.conversation('resp_a')).to.have.length(1);
    expect(minted.item('msg_a')).to.include({ id: 'msg_a' });
    now += MINTED_TTL_MS + 1;
    expect(minted.conversation('resp_a')).to.equal(undefined);
    expect(minted.item('msg_a')).to.equal(undefined);
    for (let i = 0; i < 2001; i++) minted.remember(`resp_${i}`, []);
    expect(minted.conversation('resp_0')).to.equal(undefined);
    expect(minted.conversation('resp_2000')).to.deep.equal([]);
  });

  it('spells out previous_response_id and item_reference from what was minted', () => {
    const call = { type: 'function_call', id: 'fc_minted1', call_id: 'call_1', name: 'f', arguments: '{}' };
    mintedResponses.remember('resp_minted1', [{ role: 'user', content: 'Hi' }, call]);
    const output = { type: 'function_call_output', call_id: 'call_1', output: 'ok' };
    expect(expandedInput({ previous_response_id: 'resp_minted1', input: [output] })).to.deep.equal([{ role: 'user', content: 'Hi' }, call, output]);
    expect(expandedInput({ input: [{ role: 'user', content: 'Hi' }, { type: 'item_reference', id: 'fc_minted1' }, output] })[1]).to.deep.equal(call);
  });

  it('refuses a reference to anything it does not hold, naming the field', () => {
    expect(() => expandedInput({ previous_response_id: 'resp_unknown', input: 'Hi' }))
      .to.throw(GatewayError, 'send the whole conversation')
      .with.property('param', 'previous_response_id');
    expect(() => expandedInput({ input: [{ id: 'msg_unknown' }] }))
      .to.throw(GatewayError, 'send the item itself')
      .with.property('param', 'input[0]');
  });
});
