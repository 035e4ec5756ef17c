/**
 * The Redis back end: one Lua script per decision checks every limit of every subject (key, member, account),
 * counts the request and sets the TTLs, atomically, so instances sharing Redis admit exactly the limit
 * between them (no read-then-increment race, Kong #5311). Time is the Redis server's (`TIME`), never an
 * instance's clock, so skewed instances share one window.
 *
 * Key layout under the configured prefix, per subject (`key:<id>`, `member:<org>:<member>`, `account:<id>`):
 *   rl:win:<subject>   hash  start (server ms), req, tok; expires when the window closes
 *   rl:conc:<subject>  zset  request ids in flight, scored by when their lease ends (server ms);
 *                            expires a lease after the last admission, so a dead instance's slots go too
 */
import { hashTag, type RedisClient } from '../shared-state/redis';
import { WINDOW_MS, type Admission, type Decision, type Dimension, type LimitRequest, type Limiter, type SubjectUsage } from './limiter';

/** Lua numbers print as `1.7e+12` through tostring; `%d` keeps integers whole. */
const HELPERS = `
local function int(x) return string.format('%d', x) end
`;

/**
 * KEYS: window and concurrency set of each subject, in pairs. ARGV: window ms, lease ms, tokens,
 * request id, then rpm, tpm, concurrency of each subject. Returns the verdict ('ok' or the dimension),
 * the refusing subject's index (1-based, 0 when admitted), then per subject: window start, ms until it
 * closes, requests, tokens, in flight, as left by the decision.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local windowMs, leaseMs, tokens, id = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local n = #KEYS / 2
local seen, verdict, who = {}, 'ok', 0
for i = 1, n do
  local win, conc = KEYS[2 * i - 1], KEYS[2 * i]
  local rpm, tpm, cap = tonumber(ARGV[2 + 3 * i]), tonumber(ARGV[3 + 3 * i]), tonumber(ARGV[4 + 3 * i])
  local s = { start = now, req = 0, tok = 0, inflight = 0, fresh = true, cap = cap }
  local h = redis.call('HMGET', win, 'start', 'req', 'tok')
  if h[1] and now < tonumber(h[1]) + windowMs then
    s.start, s.req, s.tok, s.fresh = tonumber(h[1]), tonumber(h[2] or '0'), tonumber(h[3] or '0'), false
  end
  if cap > 0 then
    redis.call('ZREMRANGEBYSCORE', conc, '-inf', int(now))
    s.inflight = redis.call('ZCARD', conc)
  end
  seen[i] = s
  if verdict == 'ok' then
    if rpm > 0 and s.req + 1 > rpm then verdict, who = 'requests', i
    elseif tpm > 0 and s.tok + tokens > tpm then verdict, who = 'tokens', i
    elseif cap > 0 and s.inflight + 1 > cap then verdict, who = 'concurrency', i end
  end
end
local reply = { verdict, who }
for i = 1, n do
  local s, win, conc = seen[i], KEYS[2 * i - 1], KEYS[2 * i]
  if verdict == 'ok' then
    if s.fresh then
      redis.call('HSET', win, 'start', int(now), 'req', 1, 'tok', int(tokens))
      redis.call('PEXPIRE', win, int(windowMs))
    else
      redis.call('HINCRBY', win, 'req', 1)
      redis.call('HINCRBY', win, 'tok', int(tokens))
    end
    s.req, s.tok = s.req + 1, s.tok + tokens
    if s.cap > 0 then
      redis.call('ZADD', conc, int(now + leaseMs), id)
      redis.call('PEXPIRE', conc, int(leaseMs))
      s.inflight = s.inflight + 1
    end
  end
  for _, v in ipairs({ s.start, s.start + windowMs - now, s.req, s.tok, s.inflight }) do reply[#reply + 1] = int(v) end
end
return reply
`;

/**
 * KEYS: as for ACQUIRE. ARGV: request id, token correction (actual − reserved, '0' for none), then the
 * window start each subject was counted in. Frees the request's slots and corrects its tokens in
 * windows still open; a closed window is left alone.
 */
const RELEASE = `
local id, delta = ARGV[1], ARGV[2]
for i = 1, #KEYS / 2 do
  local win, conc = KEYS[2 * i - 1], KEYS[2 * i]
  redis.call('ZREM', conc, id)
  if delta ~= '0' and redis.call('HGET', win, 'start') == ARGV[2 + i] then
    if redis.call('HINCRBY', win, 'tok', delta) < 0 then redis.call('HSET', win, 'tok', 0) end
  end
end
return 1
`;

type Script = (numberOfKeys: number, ...args: string[]) => Promise<unknown>;

export interface RedisLimiterOptions {
  readonly prefix: string;
  readonly leaseMs: number;
  readonly windowMs?: number;
}

export class RedisLimiter implements Limiter {
  private readonly acquireScript: Script;
  private readonly releaseScript: Script;
  private readonly windowMs: number;

  constructor(
    readonly redis: RedisClient,
    private readonly options: RedisLimiterOptions,
  ) {
    this.windowMs = options.windowMs ?? WINDOW_MS;
    // ioredis sends each by EVALSHA, falling back to EVAL when the server does not know it yet.
    redis.defineCommand('tollgateRateLimitAcquire', { lua: HELPERS + ACQUIRE });
    redis.defineCommand('tollgateRateLimitRelease', { lua: RELEASE });
    const commands = redis as unknown as Record<string, Script>;
    this.acquireScript = commands.tollgateRateLimitAcquire.bind(redis);
    this.releaseScript = commands.tollgateRateLimitRelease.bind(redis);
  }

  async acquire({ requestId, subjects, tokens }: LimitRequest): Promise<Decision> {
    const keys = subjects.flatMap((subject) => this.keysOf(subject.id));
    const limits = subjects.flatMap(({ limits: l }) => [String(l.rpm), String(l.tpm), String(l.concurrency)]);
    const args = [String(this.windowMs), String(this.options.leaseMs), String(tokens), requestId, ...limits];
    const reply = await this.acquireScript(keys.length, ...keys, ...args);
    if (!Array.isArray(reply) || reply.length !== 2 + 5 * subjects.length) {
      throw new Error(`unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`);
    }
    const [verdict, who] = reply as [string, number];
    const usage: SubjectUsage[] = [];
    const windows: number[] = [];
    subjects.forEach((subject, i) => {
      const [start, resetMs, requests, tokenCount, inflight] = (reply.slice(2 + 5 * i, 7 + 5 * i) as string[]).map(Number);
      windows.push(start);
      usage.push({ limits: subject.limits, requests, tokens: tokenCount, inflight, resetMs });
    });
    if (verdict !== 'ok') return { ok: false, refused: verdict as Dimension, subject: Number(who) - 1, usage, backend: 'redis' };
    const admission: Admission = { requestId, subjects, windows, tokens, backend: 'redis' };
    return { ok: true, admission, usage };
  }

  async release({ requestId, subjects, windows, tokens }: Admission, actualTokens: number | null): Promise<void> {
    const keys = subjects.flatMap((subject) => this.keysOf(subject.id));
    const delta = actualTokens === null ? 0 : actualTokens - tokens;
    await this.releaseScript(keys.length, ...keys, requestId, String(delta), ...windows.map(String));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private keysOf(subject: string): [string, string] {
    // One decision checks every level's counters in one script: on a Cluster they share a slot.
    const tag = hashTag(this.redis, 'rl');
    return [`${this.options.prefix}${tag}:win:${subject}`, `${this.options.prefix}${tag}:conc:${subject}`];
  }
}
