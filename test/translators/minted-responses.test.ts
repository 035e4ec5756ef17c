import { expect } from 'chai';
import { GatewayError } from '../../src/kernel/errors';
import { expandedInput } from '../../src/translators/responses-to-messages/expanded-input';
import { MINTED_TTL_MS, MintedResponses, mintedResponses } from '../../src/translators/responses-to-messages/minted';

const LIMITS = { responses: 3, chars: 1000, items: 10 };
const user = (content: string) => ({ role: 'user', content });
const message = (id: string) => ({ type: 'message', id, role: 'assistant', content: [] });

describe('translators/responses-to-messages: minted responses', () => {
  it('forgets a response and its items after their time', () => {
    let now = 1_000;
    const minted = new MintedResponses(() => now, LIMITS);
    minted.remember('resp_a', null, [user('Hi')], [message('msg_a')]);
    expect(minted.conversation('resp_a')).to.deep.equal([user('Hi'), message('msg_a')]);
    expect(minted.item('msg_a')).to.deep.equal(message('msg_a'));
    now += MINTED_TTL_MS + 1;
    expect(minted.conversation('resp_a')).to.equal(undefined);
    expect(minted.item('msg_a')).to.equal(undefined);
  });

  it('forgets the oldest responses beyond the count and beyond the size budget', () => {
    const minted = new MintedResponses(() => 0, LIMITS);
    for (const id of ['r1', 'r2', 'r3', 'r4']) minted.remember(id, null, [user(id)], []);
    expect(minted.conversation('r1')).to.equal(undefined);
    expect(minted.conversation('r4')).to.deep.equal([user('r4')]);
    minted.remember('big', null, [user('x'.repeat(950))], []);
    expect(minted.conversation('r3')).to.equal(undefined);
    expect(minted.conversation('big')).to.have.length(1);
  });

  it('rebuilds a conversation carried by previous_response_id from each turn kept once', () => {
    const minted = new MintedResponses(() => 0, LIMITS);
    minted.remember('r1', null, [user('one')], [message('m1')]);
    minted.remember('r2', 'r1', [user('two')], [message('m2')]);
    expect(minted.conversation('r2')).to.deep.equal([user('one'), message('m1'), user('two'), message('m2')]);
  });

  it('refuses a conversation whose earlier link is gone', () => {
    const minted = new MintedResponses(() => 0, { ...LIMITS, responses: 1 });
    minted.remember('r1', null, [user('one')], []);
    minted.remember('r2', 'r1', [user('two')], []);
    expect(minted.conversation('r2')).to.equal(undefined);
  });

  it('spells out previous_response_id and item_reference from what was minted', () => {
    const call = { type: 'function_call', id: 'fc_minted1', call_id: 'call_1', name: 'f', arguments: '{}' };
    mintedResponses.remember('resp_minted1', null, [user('Hi')], [call]);
    const output = { type: 'function_call_output', call_id: 'call_1', output: 'ok' };
    expect(expandedInput({ previous_response_id: 'resp_minted1', input: [output] })).to.deep.equal([user('Hi'), call, output]);
    expect(expandedInput({ input: [user('Hi'), { type: 'item_reference', id: 'fc_minted1' }, output] })[1]).to.deep.equal(call);
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
