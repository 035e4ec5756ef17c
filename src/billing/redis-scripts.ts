/**
 * The Lua scripts behind `RedisBook`. Each one is a single atomic step, so instances sharing Redis
 * can never interleave inside a hold, a settlement or a sweep.
 *
 * Exactness: Lua numbers are doubles, exact only up to 2^53 nano-units (about 9 million units), and
 * balances pass that easily. So no amount ever becomes a Lua number: amounts travel as decimal
 * strings, are compared as strings (`cmp`), and are added by Redis itself (`HINCRBY` is exact 64-bit
 * integer arithmetic), in a scratch field when only the sum is wanted (`add`). Amounts are exact up to
 * 2^63 − 1 nano-units (about 9.2 billion units).
 *
 * Key layout under the configured prefix:
 *   account:<id>        hash  balance, held
 *   key:<id>            hash  spent, held, limit (absent: no limit)
 *   hold:<request id>   hash  account, key, amount
 *   hold-expiries       zset  request id scored by its expiry (ms since the epoch)
 *   settled:<request id> string  the amount taken, for a day: a repeated settlement changes nothing
 *   credit-fence:<id>   hash  inflight, gen: credits being written, so a seed never races one
 *   credit-done:<token> string  a credit's Redis step already applied (its command may be retried)
 *   budget:<scope>:<id>:<start ms>:<end ms>  hash  spent, unwritten:<instance>; expires after its period
 *
 * The sweep derives account and key names from a hold's fields inside the script: fine on a single
 * Redis (or a primary with replicas), not on Redis Cluster, where keys must be declared up front.
 */
import type { Redis } from 'ioredis';

const HELPERS = `
local function cmp(a, b)
  local aNegative, bNegative = string.byte(a, 1) == 45, string.byte(b, 1) == 45
  if aNegative ~= bNegative then return aNegative and -1 or 1 end
  local sign = 1
  if aNegative then a, b, sign = string.sub(a, 2), string.sub(b, 2), -1 end
  if #a ~= #b then return (#a < #b and -1 or 1) * sign end
  -- Byte by byte: the < operator on strings follows the server's locale.
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return (x < y and -1 or 1) * sign end
  end
  return 0
end

local function neg(a)
  if a == '0' then return '0' end
  if string.byte(a, 1) == 45 then return string.sub(a, 2) end
  return '-' .. a
end

-- a + b, summed by Redis in a scratch field of an existing hash: exact where Lua would round.
local function add(hash, a, b)
  redis.call('HSET', hash, '_sum', a)
  redis.call('HINCRBY', hash, '_sum', b)
  local sum = redis.call('HGET', hash, '_sum')
  redis.call('HDEL', hash, '_sum')
  return sum
end

-- Frees a hold's amount; never below zero, which only a hash reseeded under open holds could reach.
local function unhold(hash, amount)
  if redis.call('EXISTS', hash) == 0 then return end
  redis.call('HINCRBY', hash, 'held', neg(amount))
  if cmp(redis.call('HGET', hash, 'held'), '0') < 0 then redis.call('HSET', hash, 'held', '0') end
end
`;

/**
 * KEYS: account, key, hold, hold-expiries, then one budget hash per budget. ARGV: amount, account id,
 * key id, expiry ms, request id, then per budget its scope ('account' or 'key') and its amount.
 * Replies {'seed', account missing 0|1, key missing 0|1, budgets missing ('0'/'1' per budget)},
 * {'ok'}, {'conflict'}, {'balance', balance, held}, {'key_spend_limit', limit, spent, held} or
 * {'budget', budget number (1-based), spent, held}.
 */
const HOLD = `
local account, key, hold, expiries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local amount = ARGV[1]
local accountMissing, keyMissing = redis.call('EXISTS', account) == 0, redis.call('EXISTS', key) == 0
local budgetsMissing, anyBudgetMissing = '', false
for i = 5, #KEYS do
  local missing = redis.call('EXISTS', KEYS[i]) == 0
  anyBudgetMissing = anyBudgetMissing or missing
  budgetsMissing = budgetsMissing .. (missing and '1' or '0')
end
if accountMissing or keyMissing or anyBudgetMissing then
  return {'seed', accountMissing and 1 or 0, keyMissing and 1 or 0, budgetsMissing}
end

local previous = redis.call('HMGET', hold, 'account', 'key', 'amount')
if previous[3] then
  -- The same hold again (a retried command) is already done; a different one under the same id is a bug.
  if previous[1] == ARGV[2] and previous[2] == ARGV[3] and previous[3] == amount then return {'ok'} end
  return {'conflict'}
end

local balance, held = unpack(redis.call('HMGET', account, 'balance', 'held'))
if cmp(add(account, balance, neg(held)), amount) < 0 then return {'balance', balance, held} end
local limit, spent, keyHeld = unpack(redis.call('HMGET', key, 'limit', 'spent', 'held'))
if limit and cmp(add(account, add(account, limit, neg(spent)), neg(keyHeld)), amount) < 0 then
  return {'key_spend_limit', limit, spent, keyHeld}
end
-- A budget's period spend lives in its own hash; what it holds is its key's or account's held.
for i = 5, #KEYS do
  local scope, budget = ARGV[6 + (i - 5) * 2], ARGV[7 + (i - 5) * 2]
  local budgetSpent = redis.call('HGET', KEYS[i], 'spent')
  local budgetHeld = redis.call('HGET', scope == 'account' and account or key, 'held')
  if cmp(add(account, add(account, budget, neg(budgetSpent)), neg(budgetHeld)), amount) < 0 then
    return {'budget', i - 4, budgetSpent, budgetHeld}
  end
end

redis.call('HINCRBY', account, 'held', amount)
redis.call('HINCRBY', key, 'held', amount)
redis.call('HSET', hold, 'account', ARGV[2], 'key', ARGV[3], 'amount', amount)
redis.call('ZADD', expiries, ARGV[4], ARGV[5])
return {'ok'}
`;

/**
 * KEYS: hold, hold-expiries, settled marker, account, key. ARGV: cost, request id, marker TTL seconds.
 * Replies {'settled', taken} or {'repeat', taken}.
 */
const SETTLE = `
local hold, expiries, marker, account, key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local cost = ARGV[1]
local previous = redis.call('GET', marker)
if previous then return {'repeat', previous} end

local amount = redis.call('HGET', hold, 'amount')
if amount then
  unhold(account, amount)
  unhold(key, amount)
  redis.call('DEL', hold)
  redis.call('ZREM', expiries, ARGV[2])
end
-- The cost is taken whole, as the ledger records it: above the hold it is the charge's recorded
-- overage, and the balance may go below zero by that much. A missing account hash is seeded from the
-- ledger later, which will hold this charge.
local taken = cost
-- 'unwritten:<instance>' counts what the live balance took that this instance's ledger writer has not
-- recorded yet, so balance + the live instances' unwritten = the ledger's balance: the drift check.
-- (A dead instance's figure is what its crash lost: drift.)
if redis.call('EXISTS', account) == 1 then
  redis.call('HINCRBY', account, 'balance', neg(taken))
  redis.call('HINCRBY', account, 'unwritten:' .. ARGV[4], taken)
end
if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, 'spent', taken) end
redis.call('SET', marker, taken, 'EX', ARGV[3])
return {'settled', taken}
`;

/** KEYS: hold-expiries. ARGV: now ms, batch size, key prefix. Replies how many holds it released. */
const RELEASE_EXPIRED = `
local expiries, prefix = KEYS[1], ARGV[3]
local ids = redis.call('ZRANGEBYSCORE', expiries, '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local released = 0
for _, id in ipairs(ids) do
  local hold = prefix .. 'hold:' .. id
  local account, key, amount = unpack(redis.call('HMGET', hold, 'account', 'key', 'amount'))
  if amount then
    unhold(prefix .. 'account:' .. account, amount)
    unhold(prefix .. 'key:' .. key, amount)
    redis.call('DEL', hold)
    released = released + 1
  end
  redis.call('ZREM', expiries, id)
end
return released
`;

/**
 * KEYS: account, credit fence. ARGV: balance read from the ledger, the fence's gen read before that.
 * Replies 'seeded', 'exists' (someone else seeded it) or 'busy' (a credit started or ended since the
 * fence was read, so the ledger read may miss it or count it twice: read again).
 */
const SEED_ACCOUNT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
local inflight, gen = unpack(redis.call('HMGET', KEYS[2], 'inflight', 'gen'))
if (inflight and inflight ~= '0') or (gen or '') ~= ARGV[2] then return 'busy' end
redis.call('HSET', KEYS[1], 'balance', ARGV[1], 'held', '0', 'unwritten:' .. ARGV[4], ARGV[3])
return 'seeded'
`;

/** KEYS: account. ARGV: what this instance's ledger writer has just recorded for it, the instance id. */
const WRITTEN = `
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HINCRBY', KEYS[1], 'unwritten:' .. ARGV[2], neg(ARGV[1])) end
return 1
`;

/**
 * KEYS: account. ARGV: amount, the instance that took it, the instance taking over its ledger write
 * (charges replayed from an outbox by a later process).
 */
const ADOPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'unwritten:' .. ARGV[2], neg(ARGV[1]))
redis.call('HINCRBY', KEYS[1], 'unwritten:' .. ARGV[3], ARGV[1])
if redis.call('HGET', KEYS[1], 'unwritten:' .. ARGV[2]) == '0' then redis.call('HDEL', KEYS[1], 'unwritten:' .. ARGV[2]) end
return 1
`;

/**
 * KEYS: budget. ARGV: spent in the period per the ledger, the hash's expiry (ms since the epoch: after
 * the period ends), this instance, its charges in the period not yet in the ledger. 'seeded' or 'exists'.
 */
const SEED_BUDGET = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
redis.call('HSET', KEYS[1], 'spent', ARGV[1], 'unwritten:' .. ARGV[3], ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 'seeded'
`;

/**
 * KEYS: the charge's budget hashes. ARGV: cost, instance. A settled charge counts in each period
 * whose hash exists (a missing one is seeded from the ledger, which will hold the charge);
 * 'unwritten:<instance>' keeps what the ledger has not recorded yet, as in account hashes.
 * Replies each hash's spend after it ('' for a missing hash).
 */
const CHARGE_BUDGETS = `
local spent = {}
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('HINCRBY', KEYS[i], 'unwritten:' .. ARGV[2], ARGV[1])
    spent[i] = redis.call('HINCRBY', KEYS[i], 'spent', ARGV[1])
  else
    spent[i] = ''
  end
end
return spent
`;

/** KEYS: budget hashes. ARGV: amount per hash, instance. The ledger recorded these charges. */
const BUDGETS_WRITTEN = `
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HINCRBY', KEYS[i], 'unwritten:' .. ARGV[#ARGV], neg(ARGV[i])) end
end
return 1
`;

/** KEYS: key. ARGV: spent, limit ('' for none). Replies 'seeded' or 'exists'. */
const SEED_KEY = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
redis.call('HSET', KEYS[1], 'spent', ARGV[1], 'held', '0')
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'limit', ARGV[2]) end
return 'seeded'
`;

/** KEYS: key. ARGV: limit ('' for none). Replies 1 when the key's hash exists (and was changed). */
const SET_KEY_LIMIT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'limit') else redis.call('HSET', KEYS[1], 'limit', ARGV[1]) end
return 1
`;

/** KEYS: credit fence. ARGV: fence TTL seconds. Marks a credit as being written to the ledger. */
const CREDIT_BEGIN = `
redis.call('HINCRBY', KEYS[1], 'inflight', 1)
redis.call('HINCRBY', KEYS[1], 'gen', 1)
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`;

/**
 * KEYS: credit fence, account, done marker. ARGV: amount ('0' when the ledger write failed), fence
 * TTL seconds, marker TTL seconds. Applies the credit to a seeded balance, once, and lifts the fence.
 */
const CREDIT_END = `
local fence, account, done = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', done) == 1 then return 0 end
if ARGV[1] ~= '0' and redis.call('EXISTS', account) == 1 then redis.call('HINCRBY', account, 'balance', ARGV[1]) end
if redis.call('EXISTS', fence) == 1 then
  redis.call('HINCRBY', fence, 'inflight', -1)
  if cmp(redis.call('HGET', fence, 'inflight'), '0') < 0 then redis.call('HSET', fence, 'inflight', '0') end
end
redis.call('HINCRBY', fence, 'gen', 1)
redis.call('EXPIRE', fence, ARGV[2])
redis.call('SET', done, '1', 'EX', ARGV[3])
return 1
`;

/** `numberOfKeys: null`: the count of keys varies, and is passed first. */
const SCRIPTS = {
  hold: { numberOfKeys: null, lua: HOLD },
  settle: { numberOfKeys: 5, lua: SETTLE },
  releaseExpired: { numberOfKeys: 1, lua: RELEASE_EXPIRED },
  seedAccount: { numberOfKeys: 2, lua: SEED_ACCOUNT },
  written: { numberOfKeys: 1, lua: WRITTEN },
  adopt: { numberOfKeys: 1, lua: ADOPT },
  seedKey: { numberOfKeys: 1, lua: SEED_KEY },
  seedBudget: { numberOfKeys: 1, lua: SEED_BUDGET },
  chargeBudgets: { numberOfKeys: null, lua: CHARGE_BUDGETS },
  budgetsWritten: { numberOfKeys: null, lua: BUDGETS_WRITTEN },
  setKeyLimit: { numberOfKeys: 1, lua: SET_KEY_LIMIT },
  creditBegin: { numberOfKeys: 1, lua: CREDIT_BEGIN },
  creditEnd: { numberOfKeys: 3, lua: CREDIT_END },
} as const;

export type BookScript = keyof typeof SCRIPTS;
export type RunScript = (name: BookScript, keys: readonly string[], args: readonly string[]) => Promise<unknown>;

/**
 * Registers the scripts on a client; ioredis sends each by EVALSHA and falls back to EVAL when the
 * server does not know it yet (after a restart or a SCRIPT FLUSH).
 */
export function defineBookScripts(redis: Redis): RunScript {
  for (const [name, script] of Object.entries(SCRIPTS)) {
    redis.defineCommand(commandName(name), script.numberOfKeys === null ? { lua: HELPERS + script.lua } : { numberOfKeys: script.numberOfKeys, lua: HELPERS + script.lua });
  }
  // defineCommand adds methods ioredis's types cannot know about.
  const commands = redis as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>;
  return (name, keys, args) =>
    SCRIPTS[name].numberOfKeys === null ? commands[commandName(name)](keys.length, ...keys, ...args) : commands[commandName(name)](...keys, ...args);
}

function commandName(name: string): string {
  return `tollgate_book_${name}`;
}
