/** gateway.yaml for bedrock, vertex and Azure-style openai providers: defaults, and settings checked per protocol. */
import { expect } from 'chai';
import { ConfigError } from '../../src/config/config-error';
import { parseConfig } from '../../src/config/load';

function config(providerLines: string[]) {
  return parseConfig(['version: 1', 'providers:', ...providerLines.map((line) => `  ${line}`), 'models: {}', ''].join('\n'), 'gateway.yaml', {});
}

function issuesOf(providerLines: string[]): string[] {
  try {
    config(providerLines);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).message.split('\n');
  }
  throw new Error('expected a ConfigError');
}

describe('config: cloud providers', () => {
  it('builds the Bedrock and Vertex base URLs from the region when none is given', () => {
    const { providers } = config([
      'bedrock:',
      '  protocol: bedrock',
      '  region: eu-west-3',
      'vertex:',
      '  protocol: vertex',
      '  project_id: my-project',
      '  region: us-east5',
      'vertex-global:',
      '  protocol: vertex',
      '  project_id: my-project',
      '  region: global',
    ]);
    expect(providers.bedrock.base_url).to.equal('https://bedrock-runtime.eu-west-3.amazonaws.com');
    expect(providers.vertex.base_url).to.equal('https://us-east5-aiplatform.googleapis.com');
    expect(providers['vertex-global'].base_url).to.equal('https://aiplatform.googleapis.com');
    expect(providers.bedrock.access_key_id).to.equal('');
  });

  it('requires the region of a Bedrock provider and the project and region of a Vertex provider', () => {
    expect(issuesOf(['bedrock:', '  protocol: bedrock'])).to.include('gateway.yaml:4:5 providers.bedrock: bedrock providers need "region"');
    const vertex = issuesOf(['vertex:', '  protocol: vertex']);
    expect(vertex).to.include('gateway.yaml:4:5 providers.vertex: vertex providers need "region"');
    expect(vertex).to.include('gateway.yaml:4:5 providers.vertex: vertex providers need "project_id"');
  });

  it('refuses a setting of another protocol, naming the ones the protocol takes', () => {
    const issues = issuesOf(['bedrock:', '  protocol: bedrock', '  region: us-east-1', '  api_key: sk-x', 'azure:', '  protocol: anthropic', '  base_url: https://x', '  auth_header: api-key']);
    expect(issues).to.include('gateway.yaml:6:14 providers.bedrock.api_key: "api_key" is not a setting of bedrock providers (they take: region, access_key_id, secret_access_key, session_token)');
    expect(issues).to.include('gateway.yaml:10:18 providers.azure.auth_header: "auth_header" is not a setting of anthropic providers (they take: api_key)');
  });
});
