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
 *   hold:<request id>   hash  account, key, amount, sessions (the session hashes it counts in, one a line),
 *                             member (the member hash it counts in, when checked against a member budget)
 *   member:<org id>/<member id>  hash  held: what the member's holds (any of their keys in the
 *                             organisation) hold, for their budget; made by their first hold
 *   hold-expiries       zset  request id scored by its expiry (ms since the epoch)
 *   settled:<request id> string  the amount taken, for a day: a repeated settlement changes nothing
 *   credit-fence:<id>   hash  inflight, gen: credits being written, so a seed never races one
 *   credit-done:<token> string  a credit's Redis step already applied (its command may be retried)
 *   budget:<scope>:<id>:<start ms>:<end ms>  hash  spent, unwritten:<instance>; expires after its period
 *   session:<scope>:<id>:<session id>  hash  spent, held; expires when the session has not held for a week
 *   instances           set   every instance that may have charges on their way to the ledger
 *   undrained:<instance> hash  <account id>: what the instance settled that the ledger does not hold
 *                             yet; k:<key id> and b:<scope>:<id>:<start ms>:<end ms>: the same for a
 *                             key's spend and a budget period's; w:<any of those fields>: '<request id>
 *                             <amount>' of its store write under way
 *   spend-fence:<scope>:<id> hash  gen: ledger writes touching the key's or account's spend, so a
 *                             spend seed never races one
 *   instance:<instance> string  the instance's heartbeat; outbox:<instance> string  its outbox
 *   epoch               hash  id, opens (ms, the server's clock), run_id (the server it stands on):
 *                             Redis's state since it was last found empty or copied; no seed runs
 *                             before it opens (`redis-epoch.ts`); in:<instance>: it re-asserted here
 *
 * The sweep, the seed and the epoch derive key names inside the script (an account's and key's from a
 * hold's fields, each instance's undrained hash from `instances`, the live money by a scan), from the
 * prefix they are given. On Redis Cluster a script may touch one slot only, so the book is cut into
 * groups (`book-layout.ts`), each under `<prefix>{bk<n>}:`, one slot: an account's keys are all in its
 * group, and every per-instance and per-state key above (instances, undrained, instance, outbox,
 * epoch, hold-expiries) is kept in each group, so a derived key is in the declared keys' slot. On a
 * single server there is one group, under the configured prefix.
 */
import type { RedisClient } from '../shared-state/redis';

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

-- Alive, or stopped with an outbox that will bring its charges to the ledger.
local function live(prefix, instance)
  return redis.call('EXISTS', prefix .. 'instance:' .. instance) == 1 or redis.call('EXISTS', prefix .. 'outbox:' .. instance) == 1
end
`;

/**
 * KEYS: account, key, hold, hold-expiries, then one budget hash per budget, then one session hash per
 * session budget. ARGV: amount, account id, key id, expiry ms, request id, the count of budgets, then
 * per budget the hash whose `held` is what it holds (the account's, the key's, or for a member budget
 * the member's hash, which the hold counts in and records) and its amount, then per session budget its amount, then
 * how long a session hash is kept (ms), then the epoch's key on a Cluster ('' elsewhere). Replies
 * {'epoch'} on a Cluster when the epoch was made on another server (the state is a copy: look at the
 * epoch first), {'seed', account missing 0|1, key missing 0|1, budgets and sessions missing ('0'/'1'
 * each)}, {'ok'}, {'conflict'}, {'balance', balance, held},
 * {'key_spend_limit', limit, spent, held}, {'budget', budget number (1-based), spent, held} or
 * {'session_budget', session budget number (1-based), spent, held}. The order of the checks is the
 * admission rule's (src/money/admission.ts); the admission test runs this script on the rule's cases.
 */
const HOLD = `
local account, key, hold, expiries = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local epochKey = ARGV[#ARGV]
if epochKey ~= '' then
  -- INFO is not deterministic; replicate what this script writes, not the script.
  if redis.replicate_commands then redis.replicate_commands() end
  local madeOn = redis.call('HGET', epochKey, 'run_id')
  if madeOn and madeOn ~= string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') then return {'epoch'} end
end
local amount = ARGV[1]
local firstSession = 5 + tonumber(ARGV[6])
local sessionArgs = 7 + tonumber(ARGV[6]) * 2
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
-- A budget's period spend lives in its own hash; what it holds is its key's, member's or account's held.
local member = nil
for i = 5, firstSession - 1 do
  local heldIn, budget = ARGV[7 + (i - 5) * 2], ARGV[8 + (i - 5) * 2]
  if heldIn ~= account and heldIn ~= key then member = heldIn end
  local budgetSpent = redis.call('HGET', KEYS[i], 'spent')
  local budgetHeld = redis.call('HGET', heldIn, 'held') or '0'
  if cmp(add(account, add(account, budget, neg(budgetSpent)), neg(budgetHeld)), amount) < 0 then
    return {'budget', i - 4, budgetSpent, budgetHeld}
  end
end
-- A session's spend and what its requests under way hold live in the session's own hash.
for i = firstSession, #KEYS do
  local budget = ARGV[sessionArgs + i - firstSession]
  local sessionSpent, sessionHeld = unpack(redis.call('HMGET', KEYS[i], 'spent', 'held'))
  sessionHeld = sessionHeld or '0'
  if cmp(add(account, add(account, budget, neg(sessionSpent)), neg(sessionHeld)), amount) < 0 then
    return {'session_budget', i - firstSession + 1, sessionSpent, sessionHeld}
  end
end

redis.call('HINCRBY', account, 'held', amount)
redis.call('HINCRBY', key, 'held', amount)
redis.call('HSET', hold, 'account', ARGV[2], 'key', ARGV[3], 'amount', amount)
local sessions = {}
for i = firstSession, #KEYS do
  redis.call('HINCRBY', KEYS[i], 'held', amount)
  redis.call('PEXPIRE', KEYS[i], ARGV[#ARGV - 1])
  table.insert(sessions, KEYS[i])
end
if #sessions > 0 then redis.call('HSET', hold, 'sessions', table.concat(sessions, '\\n')) end
if member then
  redis.call('HINCRBY', member, 'held', amount)
  redis.call('HSET', hold, 'member', member)
end
redis.call('ZADD', expiries, ARGV[4], ARGV[5])
return {'ok'}
`;

/**
 * KEYS: hold, hold-expiries, settled marker, account, key, this instance's undrained hash, then the
 * session hashes the charge counts in (its session's, by key and by account). ARGV: cost, request id,
 * marker TTL seconds, instance, account id, the key's undrained field ('k:<key id>'). Replies
 * {'settled', taken} or {'repeat', taken}.
 */
const SETTLE = `
local hold, expiries, marker, account, key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local cost = ARGV[1]
local previous = redis.call('GET', marker)
if previous then return {'repeat', previous} end

local amount, sessions, member = unpack(redis.call('HMGET', hold, 'amount', 'sessions', 'member'))
if amount then
  unhold(account, amount)
  unhold(key, amount)
  if member then unhold(member, amount) end
  if sessions then
    for name in string.gmatch(sessions, '[^\\n]+') do unhold(name, amount) end
  end
  redis.call('DEL', hold)
  redis.call('ZREM', expiries, ARGV[2])
end
-- In the same step as the hold is freed, so a racing hold of the session never misses the charge. A
-- missing session hash is seeded from the ledger later, which will hold it.
for i = 7, #KEYS do
  if cost ~= '0' and redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HINCRBY', KEYS[i], 'spent', cost) end
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
-- Counted whether or not the account or key hash exists: a seed subtracts (the key's: adds) what every
-- live instance has settled and the ledger does not hold yet, and this is where it reads it.
if taken ~= '0' then
  redis.call('HINCRBY', KEYS[6], ARGV[5], taken)
  redis.call('HINCRBY', KEYS[6], ARGV[6], taken)
end
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
  local account, key, amount, sessions, member = unpack(redis.call('HMGET', hold, 'account', 'key', 'amount', 'sessions', 'member'))
  if amount then
    unhold(prefix .. 'account:' .. account, amount)
    unhold(prefix .. 'key:' .. key, amount)
    if member then unhold(member, amount) end
    if sessions then
      for name in string.gmatch(sessions, '[^\\n]+') do unhold(name, amount) end
    end
    redis.call('DEL', hold)
    released = released + 1
  end
  redis.call('ZREM', expiries, id)
end
return released
`;

/**
 * KEYS: credit fence, instances. ARGV: account id, key prefix. What a seed must know before it reads
 * the ledger: the fence (credits being written, and the count of credits and ledger writes touching the
 * account) and each live instance's store write under way for it. Replies {inflight, gen, then per
 * such write its instance and '<request id> <amount>'}.
 */
const SEED_PROBE = `
local inflight, gen = unpack(redis.call('HMGET', KEYS[1], 'inflight', 'gen'))
local reply = {inflight or '0', gen or ''}
for _, instance in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if live(ARGV[2], instance) then
    local writing = redis.call('HGET', ARGV[2] .. 'undrained:' .. instance, 'w:' .. ARGV[1])
    if writing then
      table.insert(reply, instance)
      table.insert(reply, writing)
    end
  end
end
return reply
`;

/**
 * KEYS: account, credit fence, instances, epoch. ARGV: balance read from the ledger, the fence's gen
 * read before that, account id, key prefix, the epoch the seed was made for, then per store write under
 * way at the probe: its instance, '<request id> <amount>' and '1' when the ledger read holds it ('0' when not).
 * The live balance is the ledger's less what every live instance settled and the ledger did not hold
 * when read: their undrained figures, less a write under way that the ledger read already holds.
 * Replies 'seeded', 'exists' (someone else seeded it), 'epoch' (Redis lost its state since the seed
 * began: the instances' figures may not be back yet) or 'busy' (a credit or a ledger write for the
 * account started or ended since the probe, so the ledger read may miss it or count it twice: read again).
 */
const SEED_ACCOUNT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
if redis.call('HGET', KEYS[4], 'id') ~= ARGV[5] then return 'epoch' end
local inflight, gen = unpack(redis.call('HMGET', KEYS[2], 'inflight', 'gen'))
if (inflight and inflight ~= '0') or (gen or '') ~= ARGV[2] then return 'busy' end
local account, prefix = ARGV[3], ARGV[4]
local resolved = {}
for i = 6, #ARGV, 3 do resolved[ARGV[i]] = {ARGV[i + 1], ARGV[i + 2]} end
local balance = ARGV[1]
local unwritten = {}
for _, instance in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local undrained = prefix .. 'undrained:' .. instance
  if live(prefix, instance) then
    local writing = redis.call('HGET', undrained, 'w:' .. account)
    if writing then
      local known = resolved[instance]
      -- A write the probe did not see cannot have started without moving the fence's gen.
      if not known or known[1] ~= writing then return 'busy' end
      if known[2] == '1' then
        balance = add(KEYS[1], balance, string.match(writing, ' (.+)$'))
      end
    end
    local amount = redis.call('HGET', undrained, account)
    if amount and amount ~= '0' then
      balance = add(KEYS[1], balance, neg(amount))
      table.insert(unwritten, 'unwritten:' .. instance)
      table.insert(unwritten, amount)
    end
  elseif redis.call('EXISTS', undrained) == 0 then
    redis.call('SREM', KEYS[3], instance)
  end
end
redis.call('HSET', KEYS[1], 'balance', balance, 'held', '0', unpack(unwritten))
return 'seeded'
`;

/**
 * KEYS: this instance's undrained hash, then the fences the write moves (each account's credit fence,
 * each key's and account's spend fence). ARGV: fence TTL seconds, then per undrained field the write
 * lowers (an account id, 'k:<key id>', 'b:<budget>') the field, one of its charges' request ids in the
 * write and their amount. Marks a store write under way, so a seed can ask the ledger whether it holds it.
 */
const WRITE_BEGIN = `
for i = 2, #ARGV, 3 do redis.call('HSET', KEYS[1], 'w:' .. ARGV[i], ARGV[i + 1] .. ' ' .. ARGV[i + 2]) end
for i = 2, #KEYS do
  redis.call('HINCRBY', KEYS[i], 'gen', 1)
  if redis.call('TTL', KEYS[i]) < 0 then redis.call('EXPIRE', KEYS[i], ARGV[1]) end
end
return 1
`;

/**
 * KEYS: this instance's undrained hash, then per account its hash, then the fences of WRITE_BEGIN.
 * ARGV: fence TTL seconds, instance, '1' when the write committed ('0': it failed), the count of
 * accounts, then per undrained field of WRITE_BEGIN (the accounts' first, in KEYS' order) the field
 * and its amount. Ends a write begun by WRITE_BEGIN; a committed one leaves the undrained and the
 * accounts' unwritten figures in the same step as its marks go.
 */
const WRITE_END = `
local committed = ARGV[3] == '1'
local accounts = tonumber(ARGV[4])
for i = 5, #ARGV, 2 do
  local field, amount = ARGV[i], ARGV[i + 1]
  local n = (i - 5) / 2 + 1
  redis.call('HDEL', KEYS[1], 'w:' .. field)
  if committed and amount ~= '0' then
    if redis.call('HINCRBY', KEYS[1], field, neg(amount)) == 0 then redis.call('HDEL', KEYS[1], field) end
    if n <= accounts and redis.call('EXISTS', KEYS[1 + n]) == 1 then redis.call('HINCRBY', KEYS[1 + n], 'unwritten:' .. ARGV[2], neg(amount)) end
  end
end
for i = 2 + accounts, #KEYS do
  redis.call('HINCRBY', KEYS[i], 'gen', 1)
  if redis.call('TTL', KEYS[i]) < 0 then redis.call('EXPIRE', KEYS[i], ARGV[1]) end
end
return 1
`;

/**
 * KEYS: account, this instance's undrained hash. ARGV: what left this instance's ledger queue for the
 * account (written, or set aside), the instance id, the account id, then the key and budget fields
 * those charges counted in, each with its amount.
 */
const WRITTEN = `
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HINCRBY', KEYS[1], 'unwritten:' .. ARGV[2], neg(ARGV[1])) end
if redis.call('HINCRBY', KEYS[2], ARGV[3], neg(ARGV[1])) == 0 then redis.call('HDEL', KEYS[2], ARGV[3]) end
for i = 4, #ARGV, 2 do
  if redis.call('HINCRBY', KEYS[2], ARGV[i], neg(ARGV[i + 1])) == 0 then redis.call('HDEL', KEYS[2], ARGV[i]) end
end
return 1
`;

/**
 * KEYS: the undrained hashes of the instance that took the charges and of the one taking over their
 * ledger write. ARGV: the two instances, the key prefix, then per charge its account id, key id,
 * member budget id ('' for none), time (ms) and cost (charges replayed from an outbox by a later
 * process). Each charge's amount moves from the first hash to the second in its account's, key's and
 * budget periods' fields (a budget field of its account, key or member whose period holds its time), and so in the account and budget hashes'
 * `unwritten:<instance>`. Replies per charge the budget fields it moved, one a line.
 */
const MOVE_UNDRAINED = `
local from, to, fromId, toId, prefix = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local function move(field, amount, hash)
  if redis.call('HINCRBY', from, field, neg(amount)) == 0 then redis.call('HDEL', from, field) end
  redis.call('HINCRBY', to, field, amount)
  if hash and redis.call('EXISTS', hash) == 1 then
    redis.call('HINCRBY', hash, 'unwritten:' .. toId, amount)
    if redis.call('HINCRBY', hash, 'unwritten:' .. fromId, neg(amount)) == 0 then redis.call('HDEL', hash, 'unwritten:' .. fromId) end
  end
end
local budgets = {}
for _, field in ipairs(redis.call('HKEYS', from)) do
  local scope, id, first, last = string.match(field, '^b:(%a+):(.+):(%d+):(%d+)$')
  if scope then table.insert(budgets, {field, scope, id, tonumber(first), tonumber(last)}) end
end
local moved = {}
for i = 4, #ARGV, 5 do
  local account, key, member, at, cost = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3]), ARGV[i + 4]
  move(account, cost, prefix .. 'account:' .. account)
  move('k:' .. key, cost, nil)
  local fields = {}
  local owners = {account = account, key = key, member = member}
  for _, budget in ipairs(budgets) do
    local owner = owners[budget[2]]
    if owner and owner ~= '' and budget[3] == owner and at >= budget[4] and at < budget[5] then
      move(budget[1], cost, prefix .. 'budget:' .. string.sub(budget[1], 3))
      table.insert(fields, budget[1])
    end
  end
  table.insert(moved, table.concat(fields, '\\n'))
end
return moved
`;

/**
 * KEYS: this instance's undrained hash, then the charge's budget hashes. ARGV: cost, instance, then
 * each budget's undrained field. A settled charge counts in each period whose hash exists and, in the
 * same step, in this instance's undrained field of it, which a seed of a missing hash adds to the
 * ledger's spend; 'unwritten:<instance>' keeps what the ledger has not recorded yet, as in account
 * hashes, for the drift check.
 */
const CHARGE_BUDGETS = `
for i = 2, #KEYS do
  redis.call('HINCRBY', KEYS[1], ARGV[i + 1], ARGV[1])
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('HINCRBY', KEYS[i], 'unwritten:' .. ARGV[2], ARGV[1])
    redis.call('HINCRBY', KEYS[i], 'spent', ARGV[1])
  end
end
return 1
`;

/** KEYS: budget hashes. ARGV: amount per hash, instance. The ledger recorded these charges. */
const BUDGETS_WRITTEN = `
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HINCRBY', KEYS[i], 'unwritten:' .. ARGV[#ARGV], neg(ARGV[i])) end
end
return 1
`;

/**
 * KEYS: session hash, epoch. ARGV: what the session was charged per the ledger (and this instance's
 * queue), how long the hash is kept (ms), the epoch. 'seeded', 'exists' or 'epoch' (as for an account).
 */
const SEED_SESSION = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
if redis.call('HGET', KEYS[2], 'id') ~= ARGV[3] then return 'epoch' end
redis.call('HSET', KEYS[1], 'spent', ARGV[1], 'held', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 'seeded'
`;

/**
 * KEYS: spend fence, instances. ARGV: the undrained field of the key or budget to seed ('k:<key id>',
 * 'b:<budget>'), key prefix. What a spend seed must know before it reads the store: the fence's gen,
 * and each live instance's store write under way that lowers the field. Replies {gen, then per such
 * write its instance and '<request id> <amount>'}.
 */
const SPEND_PROBE = `
local reply = {redis.call('HGET', KEYS[1], 'gen') or ''}
for _, instance in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if live(ARGV[2], instance) then
    local writing = redis.call('HGET', ARGV[2] .. 'undrained:' .. instance, 'w:' .. ARGV[1])
    if writing then
      table.insert(reply, instance)
      table.insert(reply, writing)
    end
  end
end
return reply
`;

/**
 * KEYS: the key or budget hash, spend fence, instances, epoch. ARGV: what the store says was spent,
 * the fence's gen read before that, the hash's undrained field, key prefix, the epoch the seed was
 * made for, 'key' or 'budget', then the key's limit ('' for none) or the budget hash's expiry (ms since
 * 1970: after the period ends), then per store write under way at the probe: its instance, '<request
 * id> <amount>' and '1' when the store read holds it ('0' when not). The spend is the store's plus
 * what every live instance settled and the store did not hold when read: their undrained fields, less
 * a write under way that the read already holds. Replies 'seeded', 'exists', 'epoch' or 'busy' (a
 * ledger write touching the spend started or ended since the probe: read again), as for an account.
 */
const SEED_SPEND = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
if redis.call('HGET', KEYS[4], 'id') ~= ARGV[5] then return 'epoch' end
if (redis.call('HGET', KEYS[2], 'gen') or '') ~= ARGV[2] then return 'busy' end
local field, prefix = ARGV[3], ARGV[4]
local resolved = {}
for i = 8, #ARGV, 3 do resolved[ARGV[i]] = {ARGV[i + 1], ARGV[i + 2]} end
local spent = ARGV[1]
local unwritten = {}
for _, instance in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local undrained = prefix .. 'undrained:' .. instance
  if live(prefix, instance) then
    local writing = redis.call('HGET', undrained, 'w:' .. field)
    if writing then
      local known = resolved[instance]
      -- A write the probe did not see cannot have started without moving the fence's gen.
      if not known or known[1] ~= writing then return 'busy' end
      if known[2] == '1' then spent = add(KEYS[1], spent, neg(string.match(writing, ' (.+)$'))) end
    end
    local amount = redis.call('HGET', undrained, field)
    if amount and amount ~= '0' then
      spent = add(KEYS[1], spent, amount)
      table.insert(unwritten, 'unwritten:' .. instance)
      table.insert(unwritten, amount)
    end
  end
end
if ARGV[6] == 'key' then
  redis.call('HSET', KEYS[1], 'spent', spent, 'held', '0')
  if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'limit', ARGV[7]) end
else
  redis.call('HSET', KEYS[1], 'spent', spent, unpack(unwritten))
  redis.call('PEXPIREAT', KEYS[1], ARGV[7])
end
return 'seeded'
`;

/** KEYS: key. ARGV: limit ('' for none). Replies 1 when the key's hash exists (and was changed). */
const SET_KEY_LIMIT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'limit') else redis.call('HSET', KEYS[1], 'limit', ARGV[1]) end
return 1
`;

/**
 * KEYS: the source account, its credit fence, the destination's credit fence (left out when it is in
 * another Cluster slot: then put up before, by creditBegin). ARGV: amount, fence TTL
 * seconds, then the epoch's key on a Cluster ('' elsewhere). A transfer's first step: takes the amount
 * from the source's live balance when it fits in what that balance leaves beside its holds (the
 * balance step of the admission rule, src/money/transfer.ts), in the same step as every hold is
 * judged, and fences both accounts as a credit does while the ledger is written. Replies {'ok'},
 * {'seed'} (the source's hash is missing), {'epoch'} (as a hold's) or {'balance', balance, held}.
 * The ledger write that follows ends each fence with `creditEnd`: 0 for the source (or the amount
 * given back, when the write failed), the amount for the destination.
 */
const TRANSFER_TAKE = `
local account = KEYS[1]
local amount, epochKey = ARGV[1], ARGV[3]
if epochKey ~= '' then
  if redis.replicate_commands then redis.replicate_commands() end
  local madeOn = redis.call('HGET', epochKey, 'run_id')
  if madeOn and madeOn ~= string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') then return {'epoch'} end
end
if redis.call('EXISTS', account) == 0 then return {'seed'} end
local balance, held = unpack(redis.call('HMGET', account, 'balance', 'held'))
if cmp(add(account, balance, neg(held)), amount) < 0 then return {'balance', balance, held} end
redis.call('HINCRBY', account, 'balance', neg(amount))
-- The destination's fence is here when it shares the source's slot; on a Cluster, apart, it was put up before.
for i = 2, #KEYS do
  local fence = KEYS[i]
  redis.call('HINCRBY', fence, 'inflight', 1)
  redis.call('HINCRBY', fence, 'gen', 1)
  redis.call('EXPIRE', fence, ARGV[2])
end
return {'ok'}
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

/**
 * KEYS: epoch, hold-expiries. ARGV: an id for a new epoch, how long a new one keeps seeds waiting
 * (ms), '1' when the caller has seen no epoch yet (a deployment's first: it opens at once), the key
 * prefix. Makes the epoch when missing. The epoch also names the server it was made or last checked
 * on (`run_id`, new with every process): on another server the state is a copy (a replica promoted by
 * a failover, or a restart that loaded a snapshot) that may lack the last writes its source took, a
 * settlement among them. So the live money (balances, key spend, budget spend, holds) is dropped and
 * a new epoch made, which waits for the instances to re-assert their figures and reseeds from the
 * ledger: a stale balance is never held against. Replies {id, opens, now, dropped, alive, back}: times
 * in ms on the server's clock, as decimal strings; dropped is how many keys a copied state lost (''
 * when the state was not copied); alive the instances whose heartbeat is here and back those that
 * re-asserted their figures in this epoch (`in:<instance>`), each space-separated.
 */
const EPOCH = `
-- INFO is not deterministic; replicate what this script writes, not the script (the default from 5.0 on).
if redis.replicate_commands then redis.replicate_commands() end
local runId = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, opens, madeOn = unpack(redis.call('HMGET', KEYS[1], 'id', 'opens', 'run_id'))
local dropped = ''
if id and madeOn and madeOn ~= runId then
  dropped = 0
  local prefix = ARGV[4]
  -- MATCH takes a glob: the prefix's own glob characters are escaped.
  local pattern = string.gsub(prefix, '([%*%?%[%]\\\\])', '\\\\%1') .. '*'
  local cursor = '0'
  repeat
    local page = redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = page[1]
    for _, name in ipairs(page[2]) do
      local rest = string.sub(name, #prefix + 1)
      if string.find(rest, '^account:') or string.find(rest, '^key:') or string.find(rest, '^member:') or string.find(rest, '^budget:') or string.find(rest, '^hold:') then
        redis.call('DEL', name)
        dropped = dropped + 1
      end
    end
  until cursor == '0'
  dropped = tostring(dropped + redis.call('DEL', KEYS[2]))
  id = nil
end
if not id then
  id = ARGV[1]
  opens = string.format('%.0f', (ARGV[3] == '1' and not madeOn) and now or now + tonumber(ARGV[2]))
  -- A copied epoch's 'in:' fields name instances that re-asserted in the state it replaces.
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'id', id, 'opens', opens, 'run_id', runId)
elseif not madeOn then
  -- Made by a build that did not record the server: this one is its server from now on.
  redis.call('HSET', KEYS[1], 'run_id', runId)
end
local groupPrefix = ARGV[4]
local alive = {}
for _, instance in ipairs(redis.call('SMEMBERS', groupPrefix .. 'instances')) do
  if redis.call('EXISTS', groupPrefix .. 'instance:' .. instance) == 1 then table.insert(alive, instance) end
end
local back = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(field, 1, 3) == 'in:' then table.insert(back, string.sub(field, 4)) end
end
return {id, opens, string.format('%.0f', now), dropped, table.concat(alive, ' '), table.concat(back, ' ')}
`;

/**
 * KEYS: this instance's undrained hash, instances, its heartbeat, epoch. ARGV: instance, heartbeat TTL
 * ms, the epoch it re-asserts in, then field and value pairs: per undrained field (an account id,
 * 'k:<key id>', 'b:<budget>') its amount, per store write under way its 'w:<field>' and '<request id>
 * <amount>'. Makes the hash what the instance knows it to be, and says so in the epoch (`in:<instance>`)
 * when it is still that one: the other instances' seeds wait for it.
 */
const REASSERT = `
local undrained = KEYS[1]
local known = {}
for i = 4, #ARGV, 2 do known[ARGV[i]] = ARGV[i + 1] end
-- A field the instance does not know of is one it has since cleared in its own figures.
for _, field in ipairs(redis.call('HKEYS', undrained)) do
  if not known[field] then redis.call('HDEL', undrained, field) end
end
for field, value in pairs(known) do redis.call('HSET', undrained, field, value) end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
if redis.call('HGET', KEYS[4], 'id') == ARGV[3] then redis.call('HSET', KEYS[4], 'in:' .. ARGV[1], '1') end
return 1
`;

/** `numberOfKeys: null`: the count of keys varies, and is passed first. */
const SCRIPTS = {
  hold: { numberOfKeys: null, lua: HOLD },
  settle: { numberOfKeys: null, lua: SETTLE },
  releaseExpired: { numberOfKeys: 1, lua: RELEASE_EXPIRED },
  seedProbe: { numberOfKeys: 2, lua: SEED_PROBE },
  seedAccount: { numberOfKeys: 4, lua: SEED_ACCOUNT },
  writeBegin: { numberOfKeys: null, lua: WRITE_BEGIN },
  writeEnd: { numberOfKeys: null, lua: WRITE_END },
  written: { numberOfKeys: 2, lua: WRITTEN },
  moveUndrained: { numberOfKeys: 2, lua: MOVE_UNDRAINED },
  spendProbe: { numberOfKeys: 2, lua: SPEND_PROBE },
  seedSpend: { numberOfKeys: 4, lua: SEED_SPEND },
  seedSession: { numberOfKeys: 2, lua: SEED_SESSION },
  chargeBudgets: { numberOfKeys: null, lua: CHARGE_BUDGETS },
  budgetsWritten: { numberOfKeys: null, lua: BUDGETS_WRITTEN },
  setKeyLimit: { numberOfKeys: 1, lua: SET_KEY_LIMIT },
  creditBegin: { numberOfKeys: 1, lua: CREDIT_BEGIN },
  transferTake: { numberOfKeys: null, lua: TRANSFER_TAKE },
  creditEnd: { numberOfKeys: 3, lua: CREDIT_END },
  epoch: { numberOfKeys: 2, lua: EPOCH },
  reassert: { numberOfKeys: 4, lua: REASSERT },
} as const;

export type BookScript = keyof typeof SCRIPTS;
export type RunScript = (name: BookScript, keys: readonly string[], args: readonly string[]) => Promise<unknown>;

/**
 * Registers the scripts on a client; ioredis sends each by EVALSHA and falls back to EVAL when the
 * server does not know it yet (after a restart or a SCRIPT FLUSH).
 */
export function defineBookScripts(redis: RedisClient): RunScript {
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
