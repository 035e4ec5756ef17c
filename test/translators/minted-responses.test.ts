import { expect } from 'chai';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { Json } from '../../src/json';
import { GatewayError } from '../../src/kernel/errors';
import { expandedInput } from '../../src/translators/responses-to-messages/expanded-input';
import { LocalMintedStore, MINTED_TTL_MS, type MintedStore } from '../../src/translators/responses-to-messages/minted';
import { RedisMintedStore } from '../../src/translators/responses-to-messages/minted-redis';
import { NO_REFERENCES, readReferences } from '../../src/translators/responses-to-messages/references';
import { REDIS_URL, redisProblem, redisTestPrefix } from '../helpers/services';

const LIMITS = { responses: 3, chars: 1000, items: 10 };
const silent = pino({ level: 'silent' });
const user = (content: string) => ({ role: 'user', content });
const message = (id: string) => ({ type: 'message', id, role: 'assistant', content: [] });
const turn = (input: Json[], output: Json[] = [], previous: string | null = null) => ({ previous, input, output });

describe('translators/responses-to-messages: minted responses', () => {
  describe('LocalMintedStore', () => {
    it('forgets a response and its items after their time', async () => {
      let now = 1_000;
      const minted = new LocalMintedStore(() => now, LIMITS);
      await minted.remember('acct', 'resp_a', turn([user('Hi')], [message('msg_a')]));
      expect(await minted.conversation('acct', 'resp_a')).to.deep.equal([user('Hi'), message('msg_a')]);
      expect(await minted.item('acct', 'msg_a')).to.deep.equal(message('msg_a'));
      now += MINTED_TTL_MS + 1;
      expect(await minted.conversation('acct', 'resp_a')).to.equal(undefined);
      expect(await minted.item('acct', 'msg_a')).to.equal(undefined);
    });

    it('forgets the oldest responses beyond the count and beyond the size budget', async () => {
      const minted = new LocalMintedStore(() => 0, LIMITS);
      for (const id of ['r1', 'r2', 'r3', 'r4']) await minted.remember('acct', id, turn([user(id)]));
      expect(await minted.conversation('acct', 'r1')).to.equal(undefined);
      expect(await minted.conversation('acct', 'r4')).to.deep.equal([user('r4')]);
      await minted.remember('acct', 'big', turn([user('x'.repeat(950))]));
      expect(await minted.conversation('acct', 'r3')).to.equal(undefined);
      expect(await minted.conversation('acct', 'big')).to.have.length(1);
    });

    it('rebuilds a conversation carried by previous_response_id from each turn kept once', async () => {
      const minted = new LocalMintedStore(() => 0, LIMITS);
      await minted.remember('acct', 'r1', turn([user('one')], [message('m1')]));
      await minted.remember('acct', 'r2', turn([user('two')], [message('m2')], 'r1'));
      expect(await minted.conversation('acct', 'r2')).to.deep.equal([user('one'), message('m1'), user('two'), message('m2')]);
    });

    it('refuses a conversation whose earlier link is gone', async () => {
      const minted = new LocalMintedStore(() => 0, { ...LIMITS, responses: 1 });
      await minted.remember('acct', 'r1', turn([user('one')]));
      await minted.remember('acct', 'r2', turn([user('two')], [], 'r1'));
      expect(await minted.conversation('acct', 'r2')).to.equal(undefined);
    });

    it("does not show one account's responses or items to another", async () => {
      const minted = new LocalMintedStore(() => 0, LIMITS);
      await minted.remember('alice', 'r1', turn([user('secret')], [message('m1')]));
      expect(await minted.conversation('bob', 'r1')).to.equal(undefined);
      expect(await minted.item('bob', 'm1')).to.equal(undefined);
      expect(await minted.conversation('alice', 'r1')).to.have.length(2);
    });
  });

  describe('expandedInput', () => {
    it('spells out previous_response_id and item_reference from what was minted', async () => {
      const store = new LocalMintedStore();
      const call = { type: 'function_call', id: 'fc_minted1', call_id: 'call_1', name: 'f', arguments: '{}' };
      await store.remember('acct', 'resp_minted1', turn([user('Hi')], [call]));
      const output = { type: 'function_call_output', call_id: 'call_1', output: 'ok' };
      const body = { previous_response_id: 'resp_minted1', input: [output] };
      expect(expandedInput(body, await readReferences(store, 'acct', body, silent))).to.deep.equal([user('Hi'), call, output]);
      const referring = { input: [user('Hi'), { type: 'item_reference', id: 'fc_minted1' }, output] };
      expect(expandedInput(referring, await readReferences(store, 'acct', referring, silent))[1]).to.deep.equal(call);
    });

    it("refuses a made-up id, and another account's, with OpenAI's code and wording", async () => {
      const store = new LocalMintedStore();
      await store.remember('alice', 'resp_alice', turn([user('Hi')], [message('msg_alice')]));
      for (const [scope, id] of [['alice', 'resp_unknown'], ['bob', 'resp_alice']]) {
        const body = { previous_response_id: id, input: 'Hi' };
        const references = await readReferences(store, scope, body, silent);
        expect(() => expandedInput(body, references))
          .to.throw(GatewayError, `Previous response with id '${id}' not found.`)
          .that.satisfies((error: GatewayError) => error.param === 'previous_response_id' && error.status === 400 && error.spec.code === 'previous_response_not_found');
      }
      const body = { input: [{ id: 'msg_alice' }] };
      expect(() => expandedInput(body, NO_REFERENCES))
        .to.throw(GatewayError, "Item with id 'msg_alice' not found.")
        .with.property('param', 'input[0]');
    });
  });

  describe('RedisMintedStore', function () {
    const prefix = redisTestPrefix('minted');
    const clients: Redis[] = [];

    before(async function () {
      const problem = await redisProblem();
      if (problem !== null) {
        console.log(`      skipped: ${problem}`);
        this.skip();
      }
    });

    after(async () => {
      for (const client of clients) client.disconnect();
      await prefix.clear();
    });

    function instance(limits = { responsesPerAccount: 100, turnChars: 10_000 }): { store: MintedStore; local: LocalMintedStore } {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 0, enableOfflineQueue: true, retryStrategy: () => null });
      redis.on('error', () => undefined);
      clients.push(redis);
      const local = new LocalMintedStore();
      return { store: new RedisMintedStore(redis, prefix.prefix, local, silent, limits), local };
    }

    it('resolves on one instance what another minted, for the same account only', async () => {
      const a = instance().store;
      const b = instance().store;
      await a.remember('alice', 'r1', turn([user('one')], [message('m1')]));
      await a.remember('alice', 'r2', turn([user('two')], [message('m2')], 'r1'));
      expect(await b.conversation('alice', 'r2')).to.deep.equal([user('one'), message('m1'), user('two'), message('m2')]);
      expect(await b.item('alice', 'm2')).to.deep.equal(message('m2'));
      expect(await b.conversation('bob', 'r2')).to.equal(undefined);
      expect(await b.item('bob', 'm2')).to.equal(undefined);
    });

    it("deletes an account's oldest responses beyond its count, and keeps oversized turns local", async () => {
      const a = instance({ responsesPerAccount: 2, turnChars: 100 });
      const b = instance().store;
      for (const id of ['o1', 'o2', 'o3']) await a.store.remember('carol', id, turn([user(id)]));
      expect(await b.conversation('carol', 'o1')).to.equal(undefined);
      expect(await b.conversation('carol', 'o3')).to.deep.equal([user('o3')]);
      await a.store.remember('carol', 'huge', turn([user('x'.repeat(200))]));
      expect(await b.conversation('carol', 'huge')).to.equal(undefined);
      expect(await a.store.conversation('carol', 'huge')).to.have.length(1);
    });
  });
});

