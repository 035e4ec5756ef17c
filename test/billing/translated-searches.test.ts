/**
 * The searches held for a hosted web search by the routes that serve it: a translated (Claude) route
 * runs up to the max_uses it is sent, a native OpenAI route bills as OpenAI does, and a model with
 * both holds the dearer. The end-to-end charges are in test/e2e/web-search.test.ts.
 */
import { expect } from 'chai';
import { withTranslatedSearches } from '../../src/billing/translated-searches';
import { parseConfig } from '../../src/config/load';
import type { Json } from '../../src/json';
import { requestReach } from '../../src/protocols/request-reach';
import { ENDPOINTS, type Endpoint } from '../../src/protocols/types';

function configWith(translate: string) {
  return parseConfig(
    `
version: 1
providers:
  anthropic: { protocol: anthropic, base_url: http://127.0.0.1:9, api_key: k }
  openai: { protocol: openai, base_url: http://127.0.0.1:9/v1, api_key: k }
models:
  claude: { family: anthropic, routes: [{ provider: anthropic }], free: true }
  gpt: { family: openai, routes: [{ provider: openai }], free: true }
  mixed: { family: anthropic, routes: [{ provider: anthropic }, { provider: openai, priority: 1 }], free: true }
plugins:
  billing: { server_tool_uses: 10 }
  translate: ${translate}
`,
    'gateway.yaml',
    {},
  );
}

const CONFIG = configWith('{ web_search_max_uses: 4 }');

function heldSearches(endpoint: Endpoint, model: string, body: Json, config = CONFIG) {
  const reach = requestReach(endpoint.id, body, Buffer.from(JSON.stringify(body)));
  const held = withTranslatedSearches(reach, endpoint, body, config.models[model], config);
  return { searches: held.toolCalls.web_search, unsized: held.unsizedInput };
}

const SEARCH_TOOLS = { tools: [{ type: 'web_search' }] };

describe('billing/translated-searches: what a hosted web search holds on each kind of route', () => {
  it('holds the configured max_uses on a Claude model, for chat and Responses, with the results as unsized input', () => {
    expect(heldSearches(ENDPOINTS.responses, 'claude', { ...SEARCH_TOOLS })).to.deep.equal({ searches: 4, unsized: true });
    expect(heldSearches(ENDPOINTS.chat, 'claude', { web_search_options: {} })).to.deep.equal({ searches: 4, unsized: true });
  });

  it("holds a Responses request's own max_tool_calls, which is the max_uses sent", () => {
    expect(heldSearches(ENDPOINTS.responses, 'claude', { ...SEARCH_TOOLS, max_tool_calls: 2 }).searches).to.equal(2);
    expect(heldSearches(ENDPOINTS.responses, 'claude', { ...SEARCH_TOOLS, max_tool_calls: 0 }).searches).to.equal(0);
  });

  it('leaves a native OpenAI model as OpenAI bills it: one per chat request, the billing default on Responses', () => {
    expect(heldSearches(ENDPOINTS.chat, 'gpt', { web_search_options: {} })).to.deep.equal({ searches: 1, unsized: false });
    expect(heldSearches(ENDPOINTS.responses, 'gpt', { ...SEARCH_TOOLS }).searches).to.equal(null);
  });

  it('holds the dearer of both on a model with a translated and a native route', () => {
    expect(heldSearches(ENDPOINTS.chat, 'mixed', { web_search_options: {} }).searches).to.equal(4);
    expect(heldSearches(ENDPOINTS.responses, 'mixed', { ...SEARCH_TOOLS }).searches).to.equal(10);
  });

  it('holds nothing more for a request without a search, or with translation off', () => {
    expect(heldSearches(ENDPOINTS.responses, 'claude', { input: 'Hi' }).searches).to.equal(undefined);
    const off = configWith('{ enabled: false }');
    expect(heldSearches(ENDPOINTS.chat, 'claude', { web_search_options: {} }, off)).to.deep.equal({ searches: 1, unsized: false });
  });
});
