import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../src/gateway';
import { listenDescription } from '../src/main';

describe('what `tollgate serve` prints', () => {
  it('says whether the listen address is reachable from the network', () => {
    expect(listenDescription('127.0.0.1', 8080)).to.equal('127.0.0.1:8080 (this machine only; set server.host to open it)');
    expect(listenDescription('0.0.0.0', 8080)).to.match(/^0\.0\.0\.0:8080 \(every interface: .*reachable from the network\)$/);
    expect(listenDescription('::', 9000)).to.match(/^\[::\]:9000 \(every interface/);
    expect(listenDescription('10.0.0.5', 8080)).to.equal('10.0.0.5:8080');
  });

  it('logs level names, not pino\'s numbers', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger(sink);
    logger.warn('a warning');
    logger.info('a note');
    expect(lines.map((line) => (JSON.parse(line) as { level: unknown }).level)).to.deep.equal(['warn', 'info']);
  });
});
