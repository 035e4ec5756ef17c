// /console/playground — chat with any model the account may use, streamed, with a
// system prompt, temperature and max tokens; up to three models side by side on one
// prompt. It calls the gateway's own /v1/chat/completions like any client, with a key
// of this account that expires within the hour, so every turn is billed like any
// request (marked as playground in the usage) and its cost is shown once it settles.
import { apiGet, apiPost, errorMessage, withQuery } from '../api.js';
import { snippetBlock } from '../connect.js';
import { h, replace } from '../dom.js';
import { formatMoney } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { chatRequest, KEY_VARIABLE, requestSnippets, type ChatMessage, type ChatRequest } from '../playground-code.js';
import type { PricedModel, Usage } from '../types.js';
import { count, pageHeading } from '../ui.js';

const MAX_MODELS = 3;
/** Renewed a little before the server's hour is up. */
const KEY_REUSE_MS = 50 * 60 * 1000;
const SETTLE_POLL_MS = 250;
const SETTLE_TRIES = 40;

interface Column {
  model: string;
  history: ChatMessage[];
  log: HTMLElement;
  /** The request of its latest turn, for "View code". */
  lastRequest: ChatRequest | null;
}

/** The message "View code" shows when none is typed and none was sent yet. */
const EXAMPLE_MESSAGE = 'Say hello.';

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
        const usable = data.models.filter((model) => model.available && model.kind === 'text');
        replace(area, usable.length > 0
          ? playground(usable.map((model) => model.model), new Map(usable.map((model) => [model.model, model.family])), context.signal)
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

function playground(models: readonly string[], families: ReadonlyMap<string, PricedModel['family']>, signal: AbortSignal): HTMLElement {
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
  const codeArea = h('section', { id: 'playground-code', class: 'playground-code', 'aria-label': 'The request as code', 'data-testid': 'playground-code', hidden: true });
  let columns: Column[] = [];
  const viewCode = h('button', {
    type: 'button',
    class: 'button',
    'aria-expanded': 'false',
    'aria-controls': 'playground-code',
    onclick: () => {
      const open = codeArea.hidden;
      codeArea.hidden = !open;
      viewCode.setAttribute('aria-expanded', String(open));
      if (open) showCode();
    },
  }, 'View code');
  const fillKey = h('input', { type: 'checkbox', id: 'playground-code-key', 'data-testid': 'playground-code-key' });
  fillKey.addEventListener('change', () => showCode());

  const form = h('form', { class: 'form', 'aria-label': 'Playground' },
    h('div', { class: 'filters' },
      Array.from({ length: MAX_MODELS }, (_unused, index) => modelSelect(index)),
      numberInput('temperature', 'Temperature', { min: '0', max: '2', step: '0.1', value: '1' }),
      numberInput('max_tokens', 'Max tokens', { min: '1', max: '32000', step: '1', value: '512' })),
    h('div', { class: 'field' }, h('label', { for: 'playground-system' }, 'System prompt (optional)'), system),
    h('div', { class: 'field' }, h('label', { for: 'playground-prompt' }, 'Message'), prompt, h('p', { class: 'hint' }, 'Ctrl+Enter (⌘+Enter) sends.')),
    h('div', { class: 'button-row' },
      h('button', { type: 'submit', class: 'button button-primary' }, 'Send'),
      h('button', { type: 'button', class: 'button', onclick: () => { columns = []; replace(columnsArea); } }, 'New conversation'),
      viewCode),
    status);

  const pickedModels = () => [...new Set(Array.from({ length: MAX_MODELS }, (_unused, index) => (form.elements.namedItem(`model-${index}`) as HTMLSelectElement).value).filter((model) => model !== ''))];
  const readSettings = (): Settings => ({
    temperature: Number((form.elements.namedItem('temperature') as HTMLInputElement).value),
    max_tokens: Number((form.elements.namedItem('max_tokens') as HTMLInputElement).value),
    system: system.value.trim(),
  });

  /**
   * The request of the first model's column, as the next Send would post it: its conversation so
   * far and the message typed; with none typed, its last turn's request (or an example message).
   */
  const shownRequest = (): { request: ChatRequest; what: string } => {
    const picked = pickedModels();
    const model = picked[0] ?? models[0];
    // A different set of models starts a new conversation on Send, so only a matching column's history counts.
    const sameSet = columns.map((column) => column.model).join('\n') === picked.join('\n');
    const column = sameSet ? columns.find((candidate) => candidate.model === model) : undefined;
    const text = prompt.value.trim();
    if (text === '' && column?.lastRequest != null) return { request: column.lastRequest, what: `The last request sent to ${model}.` };
    const settings = readSettings();
    const messages = withSystem(settings.system, [...(column?.history ?? []), { role: 'user', content: text === '' ? EXAMPLE_MESSAGE : text }]);
    return { request: chatRequest(model, messages, settings.temperature, settings.max_tokens), what: text === '' ? `A request to ${model} with an example message: type one to see it here.` : `The request the next Send makes to ${model}.` };
  };

  let shown = 0;
  function showCode(): void {
    if (codeArea.hidden) return;
    const { request, what } = shownRequest();
    const origin = window.location.origin;
    const family = families.get(request.model) ?? 'openai';
    const render = (key: string | null) => replace(codeArea,
      h('h2', null, 'The request as code'),
      h('p', { class: 'hint', 'data-testid': 'playground-code-what' }, what,
        ' The Playground\'s own marks (its origin and session headers) are left out, so a pasted call counts as yours.'),
      h('p', { class: 'hint' }, fillKey, ' ', h('label', { for: 'playground-code-key' }, 'Fill in the Playground\'s key'),
        key === null ? ` (it expires within the hour); else set ${KEY_VARIABLE} first: export ${KEY_VARIABLE}=sk-…` : ' (it expires within the hour).'),
      requestSnippets(request, origin, key, family).map(snippetBlock));
    const turn = ++shown;
    if (!fillKey.checked) {
      render(null);
      return;
    }
    void keyFor(signal).then(
      (key) => { if (turn === shown) render(key); },
      (error: unknown) => { if (turn === shown) replace(codeArea, h('p', { class: 'notice notice-error', role: 'alert' }, errorMessage(error))); },
    );
  }

  // An open "View code" follows the form: the model, the settings, the message being typed.
  form.addEventListener('input', () => showCode());
  form.addEventListener('change', () => showCode());

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
    const picked = pickedModels();
    // A different set of models starts a new conversation: each column keeps its own history.
    if (columns.map((column) => column.model).join('\n') !== picked.join('\n')) {
      columns = picked.map((model) => ({ model, history: [], log: h('div', { 'data-testid': `playground-log-${model}` }), lastRequest: null }));
      replace(columnsArea, columns.map((column) => h('section', { class: 'playground-column', 'aria-label': column.model }, h('h2', null, column.model), column.log)));
    }
    const settings = readSettings();
    prompt.value = '';
    status.textContent = 'Sending…';
    // Every way out of a turn ends "Sending…": answered, refused, failed or thrown.
    void keyFor(signal).then(
      (key) => {
        const turns = Promise.all(columns.map((column) => turn(column, text, settings, key, session, signal)));
        // The turns' requests are made: an open "View code" shows the one just sent.
        showCode();
        return turns;
      },
    ).then(
      () => { status.textContent = ''; },
      (error: unknown) => { status.textContent = errorMessage(error); },
    );
  });

  return h('div', null, form, codeArea, columnsArea);
}

function withSystem(system: string, conversation: ChatMessage[]): ChatMessage[] {
  return system === '' ? conversation : [{ role: 'system', content: system }, ...conversation];
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
  const request = chatRequest(column.model, withSystem(settings.system, [...column.history]), settings.temperature, settings.max_tokens);
  column.lastRequest = request;
  try {
    const response = await fetch('/v1/chat/completions', {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-tollgate-origin': 'playground', 'x-tollgate-session': session },
      body: JSON.stringify(request),
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
