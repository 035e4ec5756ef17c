import { expect } from 'chai';
import { openMetricsWarning } from '../../src/metrics/open-metrics-warning';
import { captureLogger } from '../helpers/capture-logger';
import { defaultTestYaml, startTestGateway } from '../helpers/test-gateway';

const OPEN = { metricsEnabled: true, metricsToken: '' };

describe('metrics/open-metrics-warning: an open /metrics on a reachable listener is said at start', function () {
  it('warns for every interface and for a routable address, naming the fix', function () {
    for (const address of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', '::ffff:10.0.0.5']) {
      const warning = openMetricsWarning({ ...OPEN, address });
      expect(warning, address).to.be.a('string');
      expect(warning, address).to.contain('server.metrics_token').and.to.contain(address);
    }
  });

  it('stays quiet on loopback, with a token, or with the metrics plugin off', function () {
    for (const address of ['127.0.0.1', '127.0.0.53', '::1', '::ffff:127.0.0.1', 'localhost']) {
      expect(openMetricsWarning({ ...OPEN, address }), address).to.equal(null);
    }
    expect(openMetricsWarning({ address: '0.0.0.0', metricsEnabled: true, metricsToken: 's3cret' })).to.equal(null);
    expect(openMetricsWarning({ address: '0.0.0.0', metricsEnabled: false, metricsToken: '' })).to.equal(null);
  });

  async function startLines(host: string, token: string): Promise<string[]> {
    const lines: string[] = [];
    const yaml = defaultTestYaml('http://127.0.0.1:9').replace(
      'host: 127.0.0.1',
      `host: ${host}${token === '' ? '' : `\n  metrics_token: ${token}`}`,
    );
    const tg = await startTestGateway({ yaml, logger: captureLogger('info', lines) });
    await tg.stop();
    return lines.filter((line) => line.includes('/metrics is open'));
  }

  it('a gateway on 0.0.0.0 without a token logs the warning once, as a warning', async function () {
    const warned = await startLines('0.0.0.0', '');
    expect(warned).to.have.length(1);
    expect(JSON.parse(warned[0])).to.include({ level: 'warn' });
  });

  it('a gateway on 0.0.0.0 with a token, or on 127.0.0.1 without one, logs none', async function () {
    expect(await startLines('0.0.0.0', 'scrape-token')).to.deep.equal([]);
    expect(await startLines('127.0.0.1', '')).to.deep.equal([]);
  });
});
