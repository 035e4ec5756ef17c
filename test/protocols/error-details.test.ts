import { expect } from 'chai';
import { GatewayError } from '../../src/kernel/errors';
import { errorBody } from '../../src/protocols/errors';

describe('protocols/errors: error details', () => {
  const details = { error_code: 'thread_unsupported_request', unsupported: ['thread'] };
  const refusal = new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', 'thread: not here.', { param: 'thread', details });

  it('carries details in the Anthropic envelope, where the Anthropic SDK reads error.details.error_code', () => {
    expect(errorBody(refusal, 'anthropic', 'req_1')).to.deep.equal({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'thread: not here.', details },
      request_id: 'req_1',
    });
  });

  it('leaves the OpenAI envelope as OpenAI shapes it', () => {
    expect(errorBody(refusal, 'openai')).to.deep.equal({
      error: { message: 'thread: not here.', type: 'invalid_request_error', param: 'thread', code: 'invalid_value' },
    });
  });

  it('adds no details key when an error has none', () => {
    const plain = new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', 'bad.');
    expect((errorBody(plain, 'anthropic') as { error: object }).error).to.not.have.property('details');
  });
});
