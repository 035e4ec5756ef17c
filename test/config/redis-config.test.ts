/**
 * redis: one server's url, a Sentinel deployment (sentinels, name, passwords from the environment) or a
 * Redis Cluster (its nodes, the password from the environment),
 * and what the config says about it: the mix is checked with the file, line and field of the mistake,
 * and every part of the gateway agrees on whether there is a Redis at all.
 */
import { expect } from 'chai';
import { ConfigError } from '../../src/config/config-error';
import { parseConfig } from '../../src/config/load';
import { redisConfigured } from '../../src/shared-state/redis';

function yaml(...lines: string[]): string {
  return `${['providers: {}', 'models: {}', ...lines].join('\n')}\n`;
}

function issuesOf(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(text, 'gateway.yaml', env);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return (error as ConfigError).message.split('\n');
  }
  throw new Error('expected a ConfigError');
}

describe('config: redis.url, redis.sentinels or redis.cluster', () => {
  it('reads a Sentinel deployment, its passwords from the environment', () => {
    const text = yaml('redis:', '  sentinels: ["10.0.0.1:26379", "sentinel-b:26379", "[::1]:26380"]', '  name: tollgate', '  password: ${REDIS_PASSWORD}', '  sentinel_password: ${REDIS_SENTINEL_PASSWORD}');
    const config = parseConfig(text, 'gateway.yaml', { REDIS_PASSWORD: 'data-secret', REDIS_SENTINEL_PASSWORD: 'sentinel-secret' });
    expect(config.redis).to.include({ url: '', name: 'tollgate', password: 'data-secret', sentinel_password: 'sentinel-secret' });
    expect(config.redis.sentinels).to.deep.equal(['10.0.0.1:26379', 'sentinel-b:26379', '[::1]:26380']);
    expect(redisConfigured(config.redis)).to.equal(true);
  });

  it('counts a url, or sentinels, as a Redis, and neither as none', () => {
    expect(redisConfigured(parseConfig(yaml(), 'gateway.yaml', {}).redis)).to.equal(false);
    expect(redisConfigured(parseConfig(yaml('redis: { url: "redis://127.0.0.1:6379" }'), 'gateway.yaml', {}).redis)).to.equal(true);
    expect(redisConfigured(parseConfig(yaml('redis: { sentinels: ["127.0.0.1:26379"], name: m }'), 'gateway.yaml', {}).redis)).to.equal(true);
  });

  it('refuses url and sentinels together, at the sentinels line', () => {
    expect(issuesOf(yaml('redis:', '  url: redis://127.0.0.1:6379', '  sentinels: ["127.0.0.1:26379"]', '  name: m'))).to.deep.equal([
      "gateway.yaml:5:14 redis.sentinels: redis.url and redis.sentinels are exclusive: give one server's url, or the Sentinels that know the primary, not both",
    ]);
  });

  it('refuses sentinels without the master name', () => {
    expect(issuesOf(yaml('redis:', '  sentinels: ["127.0.0.1:26379"]'))).to.deep.equal(['gateway.yaml:4:14 redis.sentinels: redis.sentinels needs redis.name: the master name the Sentinels monitor']);
  });

  it('refuses the Sentinel settings without sentinels, each at its own line', () => {
    expect(issuesOf(yaml('redis:', '  url: redis://127.0.0.1:6379', '  name: m', '  password: secret', '  sentinel_password: other'))).to.deep.equal([
      'gateway.yaml:5:9 redis.name: redis.name is the master name the Sentinels monitor: it needs redis.sentinels',
      'gateway.yaml:6:13 redis.password: redis.password is for the servers behind redis.sentinels or redis.cluster; with redis.url the password goes in the url (redis://:password@host:port)',
      "gateway.yaml:7:22 redis.sentinel_password: redis.sentinel_password is the Sentinels' own password: it needs redis.sentinels",
    ]);
  });

  it('refuses a Sentinel address without a port, and a port out of range', () => {
    expect(issuesOf(yaml('redis:', '  sentinels: ["127.0.0.1"]', '  name: m'))).to.deep.equal([
      'gateway.yaml:4:15 redis.sentinels[0]: expected host:port, such as 10.0.0.5:26379 or [::1]:26379, got string "127.0.0.1"',
    ]);
    expect(issuesOf(yaml('redis:', '  sentinels: ["127.0.0.1:26379", "127.0.0.1:70000"]', '  name: m'))).to.deep.equal([
      'gateway.yaml:4:34 redis.sentinels[1]: port 70000 of "127.0.0.1:70000" is outside 1..65535',
    ]);
  });

  it('refuses an empty list of sentinels', () => {
    const issues = issuesOf(yaml('redis:', '  sentinels: []', '  name: m'));
    expect(issues).to.have.length(1);
    expect(issues[0]).to.match(/^gateway\.yaml:4:14 redis\.sentinels: /);
  });

  it('reads a Cluster: its nodes and the password from the environment, and counts it as a Redis', () => {
    const config = parseConfig(yaml('redis:', '  cluster: ["10.0.0.1:6379", "redis-b:6380", "[::1]:6381"]', '  password: ${REDIS_PASSWORD}'), 'gateway.yaml', { REDIS_PASSWORD: 'data-secret' });
    expect(config.redis).to.include({ url: '', password: 'data-secret' });
    expect(config.redis.cluster).to.deep.equal(['10.0.0.1:6379', 'redis-b:6380', '[::1]:6381']);
    expect(redisConfigured(config.redis)).to.equal(true);
  });

  it('refuses a Cluster beside a url or Sentinels, and the Sentinel settings with it', () => {
    expect(issuesOf(yaml('redis:', '  url: redis://127.0.0.1:6379', '  cluster: ["127.0.0.1:7000"]'))).to.deep.equal([
      "gateway.yaml:5:12 redis.cluster: redis.url and redis.cluster are exclusive: give one server's url, or some nodes of the Cluster, not both",
    ]);
    expect(issuesOf(yaml('redis:', '  sentinels: ["127.0.0.1:26379"]', '  name: m', '  cluster: ["127.0.0.1:7000"]'))).to.deep.equal([
      'gateway.yaml:6:12 redis.cluster: redis.sentinels and redis.cluster are exclusive: a Cluster fails over by itself, without Sentinels',
    ]);
    expect(issuesOf(yaml('redis:', '  cluster: ["127.0.0.1:7000"]', '  name: m'))).to.deep.equal(['gateway.yaml:5:9 redis.name: redis.name is the master name the Sentinels monitor: it needs redis.sentinels']);
  });

  it('refuses a Cluster node without a port, a port out of range, and a key prefix with a brace', () => {
    expect(issuesOf(yaml('redis:', '  cluster: ["127.0.0.1"]'))[0]).to.match(/^gateway\.yaml:4:13 redis\.cluster\[0\]: expected host:port/);
    expect(issuesOf(yaml('redis:', '  cluster: ["127.0.0.1:7000", "127.0.0.1:70000"]'))).to.deep.equal(['gateway.yaml:4:31 redis.cluster[1]: port 70000 of "127.0.0.1:70000" is outside 1..65535']);
    expect(issuesOf(yaml('redis:', '  cluster: ["127.0.0.1:7000"]', '  key_prefix: "t{x}:"'))).to.deep.equal([
      "gateway.yaml:5:15 redis.key_prefix: with redis.cluster the key prefix may not hold { or }: Tollgate places its keys on the Cluster's slots with hash tags of its own",
    ]);
  });
});
