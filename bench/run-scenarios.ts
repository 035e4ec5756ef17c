/**
 * What `npm run bench` compares: the paths a request can take to the fake upstream, and the
 * scenarios (plain chat and streams at several concurrencies) each path is driven with.
 */
import type { ChildProcess } from 'node:child_process';
import type { Target } from './load';

export const DIRECT = 'direct';
export const BARE = 'bare Node proxy';
export const TOLLGATE = 'Tollgate';
export const workersPathName = (workers: number) => `Tollgate, ${workers} workers`;

/** One way to the upstream, with the processes that serve it. */
export interface ServedPath {
  readonly name: string;
  readonly url: string;
  /** A Tollgate path's bench key: it gets the client's request to Tollgate. Without one (direct, bare
   * proxy) it gets the request as the upstream receives it. */
  readonly key?: string;
  /** The processes whose CPU and memory the row reports, read at each round: a cluster's primary and workers. */
  readonly pids: () => number[];
  /** Whether the row reports RSS (not for the upstream itself). */
  readonly rss: boolean;
  /** Why the path has no figures: it could not be started. */
  readonly unavailable?: string;
  /** The one process whose longest event-loop block the row reports (bench/loop-probe.ts). */
  readonly probe?: ChildProcess;
  /** RSS in MiB after start, before any request. */
  readonly restRssMiB?: number;
}

export interface Scenario {
  readonly name: string;
  readonly stream: boolean;
  readonly connections: number;
  /** The request the upstream receives: sent straight to it and through the bare proxy. */
  floor(url: string): Target;
  /** The request a client sends Tollgate. */
  gateway(url: string, key: string): Target;
}

/** The request `path` is sent in `scenario`. */
export function targetOf(scenario: Scenario, path: ServedPath): Target {
  return path.key === undefined ? scenario.floor(path.url) : scenario.gateway(path.url, path.key);
}

const USER = [{ role: 'user', content: 'Say hello.' }];
const json = { 'content-type': 'application/json' };
const messagesHeaders = (key: string) => ({ ...json, 'x-api-key': key, 'anthropic-version': '2023-06-01' });

const chat = (url: string, headers: Record<string, string>, body: string): Target => ({ url, path: '/v1/chat/completions', headers, body, protocol: 'chat' });
const messages = (url: string, headers: Record<string, string>, body: string): Target => ({ url, path: '/v1/messages', headers, body, protocol: 'messages' });

export function scenarios(): Scenario[] {
  const plainChat = JSON.stringify({ model: 'gpt-bench', max_tokens: 256, messages: USER });
  const chatStream = JSON.stringify({ model: 'gpt-bench', max_tokens: 256, stream: true, stream_options: { include_usage: true }, messages: USER });
  const messagesStream = JSON.stringify({ model: 'claude-bench', max_tokens: 256, stream: true, messages: USER });
  const translated = JSON.stringify({ model: 'claude-bench', max_tokens: 256, stream: true, stream_options: { include_usage: true }, messages: USER });
  const bearer = (key: string) => ({ ...json, authorization: `Bearer ${key}` });
  const list: Scenario[] = [];
  for (const connections of [1, 32, 128]) {
    list.push({
      name: `plain chat, ${connections} connection${connections > 1 ? 's' : ''}`,
      stream: false,
      connections,
      floor: (url) => chat(url, json, plainChat),
      gateway: (url, key) => chat(url, bearer(key), plainChat),
    });
  }
  for (const connections of [1, 128]) {
    const n = `${connections} concurrent`;
    list.push({ name: `streamed chat, ${n}`, stream: true, connections, floor: (url) => chat(url, json, chatStream), gateway: (url, key) => chat(url, bearer(key), chatStream) });
    list.push({
      name: `streamed messages, ${n}`,
      stream: true,
      connections,
      floor: (url) => messages(url, messagesHeaders('none'), messagesStream),
      gateway: (url, key) => messages(url, messagesHeaders(key), messagesStream),
    });
    // The floor is the Messages stream Tollgate itself asks the upstream for (a byte relay cannot
    // translate); the client of Tollgate gets chat chunks.
    list.push({
      name: `translated stream (chat client, claude model), ${n}`,
      stream: true,
      connections,
      floor: (url) => messages(url, messagesHeaders('none'), messagesStream),
      gateway: (url, key) => chat(url, bearer(key), translated),
    });
  }
  return list;
}
