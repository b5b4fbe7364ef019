-- The dispatcher: one decision over one or more parts (a composite's rules), all
-- checked before any is consumed, exactly as src/composite.rs does it: every part
-- passes, then each takes cost; otherwise each takes 0 (it still sees the instant).
--
-- ARGV: cost, now_s, now_ns, mode (see common.lua), detail ('1': also each part's view
-- of a cost-1 request after the decision), then per part its family's name and params.
-- KEYS: each part's keys, in order.
-- A peek decides and writes nothing; an eviction replies 1 or 0 (see common.lua).
-- Returns {now_s, now_ns, then per part: passed, pass_s, pass_ns, remaining, reset_s,
-- reset_ns [, passed1, pass1_s, pass1_ns]}. `pass` is the instant the cost would pass
-- (-1, -1: never); waits are formed in Rust (u128), from the instant asked.
-- KEYS may end with the store's marker key (one key past the parts' keys): it exists
-- from the store's opening on, so a call that finds it gone knows the server lost the
-- store's keys (FLUSHALL/FLUSHDB, a restart without persistence) and answers with an
-- error before reading or writing any state. Each call renews its TTL: 24 h after a
-- call on server time, 1 h after one at a caller's instant (the safety TTL).
local cost = tonumber(ARGV[1])
local detail = ARGV[5] == '1'
local nkeys, a = 0, 6
while a <= #ARGV do
  local family = FAMILIES[ARGV[a]]
  nkeys = nkeys + family.nkeys
  a = a + 1 + family.nargs
end
if #KEYS > nkeys then
  local ttl = 3600000
  if ABS then ttl = 86400000 end
  if redis.call('PEXPIRE', KEYS[#KEYS], ttl) == 0 then
    return redis.error_reply('STATELOST the store\'s marker key is gone: the server lost its keys')
  end
end
local parts = {}
local k
k, a = 1, 6
while a <= #ARGV do
  local family = FAMILIES[ARGV[a]]
  local st = family.load(KEYS, k, ARGV, a + 1)
  st.family = family
  parts[#parts + 1] = st
  k = k + family.nkeys
  a = a + 1 + family.nargs
end
if ARGV[4] == 'evict' then
  -- The in-memory limiter's evict_idle: the key is forgotten (every part's keys) when
  -- every part's state is indistinguishable from a fresh one. Replies 1 if it was.
  for _, st in ipairs(parts) do
    local _, idle = st.family.reset(st)
    if not idle then return 0 end
  end
  redis.call('DEL', unpack(KEYS, 1, nkeys))
  return 1
end
local function instant(ok, p)
  if p == nil then return {0, -1, -1} end
  if ok then return {1, p[1], p[2]} end
  return {0, p[1], p[2]}
end
local all = true
local checks = {}
for i, st in ipairs(parts) do
  local ok, p = st.family.check(st, cost)
  checks[i] = instant(ok, p)
  all = all and ok
end
local take = 0
if all then take = cost end
local reply = {NOW[1], NOW[2]}
local function push(t) for _, v in ipairs(t) do reply[#reply + 1] = v end end
for i, st in ipairs(parts) do
  if not DRY then
    st.family.take(st, take)
    st.family.save(st)
  end
  local reset = st.family.reset(st)
  push(checks[i])
  push({st.family.remaining(st), reset[1], reset[2]})
  if detail then push(instant(st.family.check(st, 1))) end
end
return reply
