// "View code" in the Playground: the chat request a turn sends, as curl and the OpenAI SDK (and the
// Anthropic SDK for an Anthropic-family model), ready to paste. The body is the Playground's own
// (messages, temperature, max tokens, streamed with usage); the console's marks (x-tollgate-origin,
// x-tollgate-session) are left out, so a pasted call counts as the caller's, not the Playground's.
import type { Snippet } from './connect.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** What the Playground posts to /v1/chat/completions, as it posts it. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  temperature: number;
  max_tokens: number;
  stream: true;
  stream_options: { include_usage: true };
}

export function chatRequest(model: string, messages: ChatMessage[], temperature: number, maxTokens: number): ChatRequest {
  return { model, messages, temperature, max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } };
}

/** The environment variable the snippets read the key from, unless the key is filled in. */
export const KEY_VARIABLE = 'TOLLGATE_API_KEY';

/** Messages' temperature stops at 1, where chat completions' goes to 2 (the gateway clamps it so too). */
const MESSAGES_MAX_TEMPERATURE = 1;

/** Single-quoted for a POSIX shell: nothing inside is expanded, a quote is closed, escaped, reopened. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/**
 * A Python literal of JSON data: JSON's string escapes are Python's too; only true, false and null
 * are spelt otherwise, and the line separators are escaped (a raw one would read as a line break).
 */
function python(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null) return 'None';
  if (Array.isArray(value)) return `[${value.map(python).join(', ')}]`;
  if (typeof value === 'object') return `{${Object.entries(value as Record<string, unknown>).map(([key, item]) => `${python(key)}: ${python(item)}`).join(', ')}}`;
  return JSON.stringify(value).replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/** The snippets of `request` against `origin` (the gateway's), with `key` filled in, or read from $TOLLGATE_API_KEY when null. */
export function requestSnippets(request: ChatRequest, origin: string, key: string | null, family: 'openai' | 'anthropic'): Snippet[] {
  const pythonKey = key === null ? `os.environ[${python(KEY_VARIABLE)}]` : python(key);
  const pythonImports = key === null ? ['import os'] : [];
  const snippets: Snippet[] = [
    {
      id: 'playground-curl',
      title: 'curl',
      text: [
        // -N prints the stream as it comes; --fail-with-body exits non-zero on an error, showing it.
        `curl -sS -N --fail-with-body ${origin}/v1/chat/completions \\`,
        `  -H ${key === null ? `"Authorization: Bearer $${KEY_VARIABLE}"` : shellQuote(`Authorization: Bearer ${key}`)} \\`,
        "  -H 'Content-Type: application/json' \\",
        `  -d ${shellQuote(JSON.stringify(request, null, 2))}`,
      ].join('\n'),
    },
    {
      id: 'playground-openai',
      title: 'OpenAI SDK (Python)',
      text: [
        ...pythonImports,
        'from openai import OpenAI',
        '',
        `client = OpenAI(base_url=${python(`${origin}/v1`)}, api_key=${pythonKey})`,
        'stream = client.chat.completions.create(',
        `    model=${python(request.model)},`,
        `    messages=${python(request.messages)},`,
        `    temperature=${python(request.temperature)},`,
        `    max_tokens=${python(request.max_tokens)},`,
        '    stream=True,',
        '    stream_options={"include_usage": True},',
        ')',
        'for chunk in stream:',
        '    if chunk.choices and chunk.choices[0].delta.content:',
        '        print(chunk.choices[0].delta.content, end="", flush=True)',
        'print()',
      ].join('\n'),
    },
  ];
  if (family === 'anthropic') {
    // Messages takes the system prompt beside the conversation, not in it.
    const system = request.messages.filter((message) => message.role === 'system').map((message) => message.content).join('\n\n');
    const conversation = request.messages.filter((message) => message.role !== 'system');
    snippets.push({
      id: 'playground-anthropic',
      title: 'Anthropic SDK (Python)',
      text: [
        ...pythonImports,
        'import anthropic',
        '',
        `client = anthropic.Anthropic(base_url=${python(origin)}, api_key=${pythonKey})`,
        'with client.messages.stream(',
        `    model=${python(request.model)},`,
        `    max_tokens=${python(request.max_tokens)},`,
        `    temperature=${python(Math.min(request.temperature, MESSAGES_MAX_TEMPERATURE))},`,
        ...(system === '' ? [] : [`    system=${python(system)},`]),
        `    messages=${python(conversation)},`,
        ') as stream:',
        '    for text in stream.text_stream:',
        '        print(text, end="", flush=True)',
        'print()',
      ].join('\n'),
    });
  }
  return snippets;
}
