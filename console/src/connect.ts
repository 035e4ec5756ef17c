// What to do with a new key: the gateway's base URLs and copy-ready snippets for curl, the OpenAI
// and Anthropic SDKs, Claude Code and Codex, each with the key and a model that can answer filled
// in. Shown once, with the key, right after Add Token.
import { copyText } from './clipboard.js';
import { h } from './dom.js';
import { statusLine } from './status.js';

export interface ConnectModels {
  /** A model for OpenAI-shaped clients (an OpenAI-family one when there is one). */
  openai: string;
  /** A model for Anthropic-shaped clients (an Anthropic-family one when there is one). */
  anthropic: string;
}

export interface Snippet {
  id: string;
  title: string;
  text: string;
}

/** The snippets for `secret` against this console's own origin (the gateway's). */
function connectSnippets(origin: string, secret: string, models: ConnectModels): Snippet[] {
  const openaiBase = `${origin}/v1`;
  const hello = '[{"role": "user", "content": "Say hello."}]';
  return [
    {
      id: 'curl',
      title: 'curl',
      text: [
        `curl -sS ${openaiBase}/chat/completions \\`,
        `  -H 'Authorization: Bearer ${secret}' \\`,
        "  -H 'Content-Type: application/json' \\",
        `  -d '{"model": "${models.openai}", "messages": ${hello}}'`,
      ].join('\n'),
    },
    {
      id: 'openai',
      title: 'OpenAI SDK (Python)',
      text: [
        'from openai import OpenAI',
        '',
        `client = OpenAI(base_url="${openaiBase}", api_key="${secret}")`,
        `reply = client.chat.completions.create(model="${models.openai}", messages=${hello})`,
        'print(reply.choices[0].message.content)',
      ].join('\n'),
    },
    {
      id: 'anthropic',
      title: 'Anthropic SDK (Python)',
      text: [
        'import anthropic',
        '',
        `client = anthropic.Anthropic(base_url="${origin}", api_key="${secret}")`,
        `message = client.messages.create(model="${models.anthropic}", max_tokens=256, messages=${hello})`,
        'print(message.content[0].text)',
      ].join('\n'),
    },
    {
      id: 'claude-code',
      title: 'Claude Code',
      text: [
        `export ANTHROPIC_BASE_URL=${origin}`,
        `export ANTHROPIC_AUTH_TOKEN=${secret}`,
        `claude --model ${models.anthropic}`,
      ].join('\n'),
    },
    {
      id: 'codex',
      title: 'Codex (~/.codex/config.toml)',
      text: [
        `model = "${models.openai}"`,
        'model_provider = "tollgate"',
        '',
        '[model_providers.tollgate]',
        'name = "Tollgate"',
        `base_url = "${openaiBase}"`,
        'env_key = "TOLLGATE_API_KEY"',
        'wire_api = "responses"',
        '',
        `# and in the shell that runs codex: export TOLLGATE_API_KEY=${secret}`,
      ].join('\n'),
    },
  ];
}

/** The base URLs and the snippets, each with its own Copy button. */
export function connectSection(secret: string, models: ConnectModels): HTMLElement {
  const origin = window.location.origin;
  return h('section', { class: 'connect', 'aria-labelledby': 'connect-heading', 'data-testid': 'connect' },
    h('h3', { id: 'connect-heading' }, 'Use it'),
    h('dl', { class: 'connect-urls' },
      h('dt', null, 'Base URL for OpenAI-style clients'), h('dd', null, h('code', { 'data-testid': 'base-url-openai' }, `${origin}/v1`)),
      h('dt', null, 'Base URL for Anthropic-style clients'), h('dd', null, h('code', { 'data-testid': 'base-url-anthropic' }, origin))),
    connectSnippets(origin, secret, models).map(snippetBlock));
}

/** A snippet with its title and Copy button (its status line says whether the copy worked). */
export function snippetBlock(snippet: Snippet): HTMLElement {
  const status = statusLine();
  const code = h('pre', { class: 'snippet', 'data-testid': `snippet-${snippet.id}`, tabindex: 0, 'aria-label': `${snippet.title} snippet` }, h('code', null, snippet.text));
  const copy = h('button', {
    type: 'button',
    class: 'button button-small',
    'aria-label': `Copy the ${snippet.title} snippet`,
    'data-testid': `copy-${snippet.id}`,
    onclick: async () => {
      const copied = await copyText(snippet.text, code);
      if (copied) status.show('Copied to the clipboard.', 'success');
      else status.show('Could not copy automatically: the text is selected, press Ctrl+C (or ⌘C).', 'error');
    },
  }, 'Copy');
  return h('div', { class: 'snippet-block' },
    h('div', { class: 'snippet-head' }, h('h4', null, snippet.title), copy),
    code,
    status.element);
}
