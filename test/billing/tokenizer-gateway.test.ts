/**
 * A gateway's main thread never loads the encoder, and its tokenizer worker never keeps the process
 * alive: run in a child process of its own, since this test process loads gpt-tokenizer to compare.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { requestText } from '../../src/protocols/request-text';
import { slicedCount } from '../helpers/o200k';

const BODY = { model: 'gpt-test', system: 'Be brief.', messages: [{ role: 'user', content: 'Count the tokens of this sentence, please. '.repeat(50) }] };

const CHILD = `
const { startTestGateway } = require(${JSON.stringify(join(__dirname, '../helpers/test-gateway.js'))});
const loaded = () => Object.keys(require.cache).some((path) => path.includes('gpt-tokenizer'));
(async () => {
  const tg = await startTestGateway({});
  const atStart = loaded();
  const response = await fetch(tg.url + '/v1/messages/count_tokens', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': tg.key, 'anthropic-version': '2023-06-01' },
    body: ${JSON.stringify(JSON.stringify(BODY))},
  });
  const body = await response.json();
  const afterCount = loaded();
  await tg.stop();
  console.log(JSON.stringify({ status: response.status, body, atStart, afterCount }));
})();
`;

describe('billing/tokenizer in a gateway process', function () {
  this.timeout(60_000);

  it('counts in the worker, never loads the encoder in the main thread, and exits once stopped', async () => {
    const output = await new Promise<string>((resolve, reject) => {
      // The timeout fails the test if the worker kept the process alive after stop().
      execFile(process.execPath, ['-e', CHILD], { timeout: 30_000 }, (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`))));
    });
    const result = JSON.parse(output.trim().split('\n').pop()!) as { status: number; body: { input_tokens: number }; atStart: boolean; afterCount: boolean };
    expect(result.status).to.equal(200);
    expect(result.body.input_tokens).to.equal(slicedCount(requestText(BODY)));
    expect(result.atStart, 'encoder loaded in the main thread at start').to.equal(false);
    expect(result.afterCount, 'encoder loaded in the main thread by a count').to.equal(false);
  });
});
