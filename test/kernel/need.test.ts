import { expect } from 'chai';
import type { GatewayState, ParsedRequest } from '../../src/kernel/context';
import { GatewayError } from '../../src/kernel/errors';
import { need } from '../../src/kernel/need';

function contextWith(slots: Partial<GatewayState>): { state: GatewayState } {
  return { state: { requestId: 'req_1', clientRequestId: null, ...slots } as GatewayState };
}

function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('kernel/need', () => {
  it('returns the slot an earlier stage filled, the same object', () => {
    const request = { raw: Buffer.from('{}'), body: {}, stream: false, modelSpan: [0, 0] } as unknown as ParsedRequest;
    expect(need(contextWith({ request }), 'request')).to.equal(request);
  });

  it('throws the coded internal error, a 500 with a generic message, when the slot is empty', () => {
    const err = thrownBy(() => need(contextWith({}), 'auth'));
    expect(err).to.be.instanceOf(GatewayError);
    const gatewayError = err as GatewayError;
    expect(gatewayError.code).to.equal('TOLLGATE_ERR_INTERNAL_STATE');
    expect(gatewayError.status).to.equal(500);
    expect(gatewayError.message).to.equal('The gateway failed to handle this request.');
    expect(gatewayError.message).to.not.include('auth');
    // The log gets the slot's name through the cause; the client never sees it.
    expect(String((gatewayError.cause as Error).message)).to.include("'auth'");
  });
});
