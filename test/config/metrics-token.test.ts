/**
 * `server.metrics_token` and its older name `plugins.metrics.bearer_token`: one token, read from
 * either key, `${ENV}` substituted like every secret, and two different values refused.
 */
import { expect } from 'chai';
import { ConfigError } from '../../src/config/config-error';
import { parseConfig } from '../../src/config/load';

function config(server: string, metrics: string, env: NodeJS.ProcessEnv = {}) {
  const text = `version: 1\nserver: { host: 127.0.0.1${server} }\nproviders: {}\nmodels: {}\nplugins:\n  metrics: ${metrics}\n`;
  return parseConfig(text, 'gateway.yaml', env);
}

describe('config: the /metrics token', () => {
  it('is empty (no token needed) unless set', () => {
    expect(config('', '{}').server.metrics_token).to.equal('');
  });

  it('reads server.metrics_token, with ${ENV} substituted', () => {
    expect(config(', metrics_token: "${METRICS_TOKEN}"', '{}', { METRICS_TOKEN: 'scrape-me' }).server.metrics_token).to.equal('scrape-me');
    expect(config(', metrics_token: "${METRICS_TOKEN:-}"', '{}').server.metrics_token).to.equal('');
  });

  it('takes plugins.metrics.bearer_token, its older name, when only that is set, or both say the same', () => {
    expect(config('', '{ bearer_token: older }').server.metrics_token).to.equal('older');
    expect(config(', metrics_token: same', '{ bearer_token: same }').server.metrics_token).to.equal('same');
  });

  it('refuses the two keys set to different tokens, naming both', () => {
    let thrown: unknown;
    try {
      config(', metrics_token: one', '{ bearer_token: two }');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.be.instanceOf(ConfigError);
    expect((thrown as ConfigError).message).to.match(/plugins\.metrics\.bearer_token: differs from server\.metrics_token/);
  });
});
