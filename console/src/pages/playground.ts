// /console/playground — chat with any model the account may use, streamed, with a
// system prompt, temperature and max tokens; up to three models side by side on one
// prompt. It calls the gateway's own /v1/chat/completions like any client, with a key
// of this account that expires within the hour, so every turn is billed like any
// request (marked as playground in the usage) and its cost is shown once it settles.
import { apiGet, apiPost, errorMessage, withQuery } from '../api.js';
import { h, replace } from '../dom.js';
import { formatMoney } from '../money.js';
import type { Page, PageContext } from '../page.js';
import type { PricedModel, Usage } from '../types.js';
import { count, pageHeading } from '../ui.js';

const MAX_MODELS = 3;
/** Renewed a little before the server's hour is up. */
const KEY_REUSE_MS = 50 * 60 * 1000;
const SETTLE_POLL_MS = 250;
const SETTLE_TRIES = 40;

interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

interface Column {
  model: string;
  history: ChatMessage[];
  log: HTMLElement;
}

/** The playground key of this page load, kept in memory only (never in storage). */
let playgroundKey: { secret: string; until: number } | null = null;

async function keyFor(signal: AbortSignal): Promise<string> {
  if (playgroundKey !== null && playgroundKey.until > Date.now()) return playgroundKey.secret;
  const issued = await apiPost<{ secret: string }>('/api/playground/key', {}, { signal });
  playgroundKey = { secret: issued.secret, until: Date.now() + KEY_REUSE_MS };
  return issued.secret;
}

function randomSession(): string {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return `playground-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export const playgroundPage: Page = {
  title: 'Playground',
  render(context: PageContext) {
    const area = h('div');
    context.root.append(
      pageHeading('Playground', 'Try a model before pointing an app at it. Every turn is billed like any request and marked as playground in your usage.'),
      area);
    void apiGet<{ models: PricedModel[] }>('/api/prices', { signal: context.signal }).then(
      (data) => {
        // Only models that can answer, text ones (the chat endpoint): the first is the default.
        const usable = data.models.filter((model) => model.available && model.kind === 'text').map((model) => model.model);
        replace(area, usable.length > 0
          ? playground(usable, context.signal)
          : h('p', { class: 'notice', 'data-testid': 'playground-no-models' }, 'No model can answer yet: the operator has not configured a provider for any of them.'));
      },
      (error: unknown) => replace(area, h('p', { class: 'notice notice-error', role: 'alert' }, errorMessage(error))),
    );
  },
};

function numberInput(name: string, label: string, attrs: Record<string, string>): HTMLElement {
  const id = `playground-${name}`;
  return h('div', { class: 'field' }, h('label', { for: id }, label), h('input', { id, name, type: 'number', ...attrs }));
}

function playground(models: readonly string[], signal: AbortSignal): HTMLElement {
  const session = randomSession();
  const modelSelect = (index: number) => {
    const id = `playground-model-${index}`;
    const options = index === 0 ? models : ['', ...models];
    return h('div', { class: 'field' },
      h('label', { for: id }, index === 0 ? 'Model' : `Compare with (${index})`),
      h('select', { id, name: `model-${index}` }, options.map((model) => h('option', { value: model }, model === '' ? 'none' : model))));
  };
  const system = h('textarea', { id: 'playground-system', name: 'system', rows: 2, class: 'playground-prompt' });
  const prompt = h('textarea', { id: 'playground-prompt', name: 'prompt', rows: 4, class: 'playground-prompt', required: true });
  const columnsArea = h('div', { class: 'playground-columns', 'data-testid': 'playground-columns' });
  const status = h('p', { class: 'muted', role: 'status' });
  let columns: Column[] = [];

  const form = h('form', { class: 'form', 'aria-label': 'Playground' },
    h('div', { class: 'filters' },
      Array.from({ length: MAX_MODELS }, (_unused, index) => modelSelect(index)),
      numberInput('temperature', 'Temperature', { min: '0', max: '2', step: '0.1', value: '1' }),
      numberInput('max_tokens', 'Max tokens', { min: '1', max: '32000', step: '1', value: '512' })),
    h('div', { class: 'field' }, h('label', { for: 'playground-system' }, 'System prompt (optional)'), system),
    h('div', { class: 'field' }, h('label', { for: 'playground-prompt' }, 'Message'), prompt, h('p', { class: 'hint' }, 'Ctrl+Enter (⌘+Enter) sends.')),
    h('div', { class: 'button-row' },
      h('button', { type: 'submit', class: 'button button-primary' }, 'Send'),
      h('button', { type: 'button', class: 'button', onclick: () => { columns = []; replace(columnsArea); } }, 'New conversation')),
    status);

  // Ctrl+Enter (⌘+Enter on a Mac) sends, as in most chat tools; Enter alone stays a new line.
  prompt.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (text === '') return;
    const chosen = Array.from({ length: MAX_MODELS }, (_unused, index) => (form.elements.namedItem(`model-${index}`) as HTMLSelectElement).value).filter((model) => model !== '');
    const picked = [...new Set(chosen)];
    // A different set of models starts a new conversation: each column keeps its own history.
    if (columns.map((column) => column.model).join('\n') !== picked.join('\n')) {
      columns = picked.map((model) => ({ model, history: [], log: h('div', { 'data-testid': `playground-log-${model}` }) }));
      replace(columnsArea, columns.map((column) => h('section', { class: 'playground-column', 'aria-label': column.model }, h('h2', null, column.model), column.log)));
    }
    const settings = {
      temperature: Number((form.elements.namedItem('temperature') as HTMLInputElement).value),
      max_tokens: Number((form.elements.namedItem('max_tokens') as HTMLInputElement).value),
      system: system.value.trim(),
    };
    prompt.value = '';
    status.textContent = 'Sending…';
    // Every way out of a turn ends "Sending…": answered, refused, failed or thrown.
    void keyFor(signal).then(
      (key) => Promise.all(columns.map((column) => turn(column, text, settings, key, session, signal))),
    ).then(
      () => { status.textContent = ''; },
      (error: unknown) => { status.textContent = errorMessage(error); },
    );
  });

  return h('div', null, form, columnsArea);
}

interface Settings {
  temperature: number;
  max_tokens: number;
  system: string;
}

/** One turn in one column: the reply streamed in as it arrives, then what it cost. */
async function turn(column: Column, text: string, settings: Settings, key: string, session: string, signal: AbortSignal): Promise<void> {
  column.history.push({ role: 'user', content: text });
  const reply = h('p', { class: 'playground-turn', 'data-testid': 'playground-reply' });
  const cost = h('p', { class: 'playground-cost', 'data-testid': 'playground-cost' }, 'Cost: settling…');
  column.log.append(h('p', { class: 'playground-turn playground-turn-user' }, text), reply, cost);
  const startedAt = new Date(Date.now() - 60_000).toISOString();
  const messages: ChatMessage[] = settings.system === '' ? column.history : [{ role: 'system', content: settings.system }, ...column.history];
  try {
    const response = await fetch('/v1/chat/completions', {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-tollgate-origin': 'playground', 'x-tollgate-session': session },
      body: JSON.stringify({ model: column.model, messages, temperature: settings.temperature, max_tokens: settings.max_tokens, stream: true, stream_options: { include_usage: true } }),
    });
    const requestId = response.headers.get('x-request-id');
    if (!response.ok || response.body === null) {
      const body = (await response.json().catch(() => null)) as { error?: { message?: string; code?: string } } | null;
      reply.textContent = body?.error?.message ?? `The gateway answered ${response.status}.`;
      // Refused for the balance (not a budget, also 402): the way out is one click away.
      if (response.status === 402 && body?.error?.code === 'insufficient_balance') reply.append(' ', h('a', { href: '/console/topup', 'data-testid': 'playground-topup' }, 'Top up'));
      // A refused or failed request is not charged: nothing to wait for.
      cost.textContent = 'Cost: none, the request was not answered.';
      return;
    } else {
      await readStream(response.body, (delta) => reply.append(delta));
      column.history.push({ role: 'assistant', content: reply.textContent ?? '' });
    }
    if (requestId !== null) await showCost(requestId, startedAt, cost, signal);
  } catch (error) {
    reply.textContent = errorMessage(error);
    if (cost.textContent === 'Cost: settling…') cost.textContent = 'Cost: unknown, see Usage.';
  }
}

/** Server-sent events of a chat completion stream: each delta's text, in order. */
async function readStream(body: ReadableStream<Uint8Array>, onText: (text: string) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') return;
        const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[] };
        const text = chunk.choices?.[0]?.delta?.content;
        if (typeof text === 'string' && text !== '') onText(text);
      }
    }
  }
}

/**
 * The turn's charge reaches the ledger in the next batch: the newest usage is read until it holds the
 * turn's request (a list, so a charge not written yet is an empty answer rather than a 404).
 */
async function showCost(requestId: string, since: string, target: HTMLElement, signal: AbortSignal): Promise<void> {
  for (let tries = 0; tries < SETTLE_TRIES; tries++) {
    const { usage } = await apiGet<{ usage: Usage[] }>(withQuery('/api/usage', { since, limit: 100 }), { signal });
    const row = usage.find((entry) => entry.request_id === requestId);
    if (row !== undefined) {
      replace(target, 'Cost: ', h('a', { href: withQuery('/console/request', { id: requestId }), 'data-testid': 'playground-cost-value', title: row.cost }, formatMoney(row.cost)),
        ` (${count(row.input_tokens + row.cache_read_tokens + row.cache_write_tokens + row.cache_write_1h_tokens)} in, ${count(row.output_tokens)} out)`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
  }
  target.textContent = 'Cost: not settled yet; see Usage.';
}
