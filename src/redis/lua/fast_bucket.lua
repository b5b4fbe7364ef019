-- The fast path of the bucket family (token bucket, leaky bucket, GCRA): one part, a
-- decision that writes (server time, or a caller's instant with the safety TTL), no
-- per-rule detail. The same arithmetic, key format, arguments and reply as
-- common.lua + bucket.lua + main.lua, written straight through: no function table, no
-- pair tables, one string.match and one string.format (%d: exact for the integers
-- < 2^53 printed, half the cost of %.0f). A call of the general script
-- defines ~30 functions and builds ~10 small tables before it computes anything; this
-- one costs about half as much server time (docs/performance.md). src/redis/script.rs
-- picks it; tests/redis_differential.rs holds it equal to the in-memory algorithms.
--
-- KEYS: the state, then (optional) the store's marker. ARGV: cost, now_s, now_ns
-- ('' '' = the server's TIME), mode ('abs' or 'ttl<ms>'), detail (ignored: '0'),
-- 'bucket', max', unit', burst, dir. Every bound of bucket.lua holds (checked in Rust).
local E9 = 1000000000
local floor = math.floor
-- floor(a / b) and a mod b, exact for integers a >= 0, b >= 1 with a + b <= 2^53.
local function divmod(a, b)
  local q = floor(a / b); local r = a - q * b
  if r < 0 then q = q - 1; r = r + b elseif r >= b then q = q + 1; r = r - b end
  return q, r
end
local function ceildiv(a, b) local q, r = divmod(a, b); if r > 0 then q = q + 1 end; return q end

local now_s, now_n
if ARGV[2] == '' then
  local t = redis.call('TIME'); now_s = tonumber(t[1]); now_n = tonumber(t[2]) * 1000
else
  now_s = tonumber(ARGV[2]); now_n = tonumber(ARGV[3])
end
local cost = tonumber(ARGV[1])
local max, unit, burst = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local fill = ARGV[10] == 'fill'
local cap = burst * unit
local key = KEYS[1]

-- Load; now = max(now, last): a backwards clock neither refills nor drains.
local level, s, n, elapsed = nil, now_s, now_n, 0
local raw = redis.call('GET', key)
-- The store's marker (KEYS[2]) is checked and renewed only when the state is missing:
-- a state that is there was not lost, and after a FLUSHALL or a restart every state is
-- missing, so the first call after one still finds the marker gone. STATELOST is
-- answered before anything is written.
if not raw and #KEYS > 1 then
  local ttl = 3600000
  if ARGV[4] == 'abs' then ttl = 86400000 end
  if redis.call('PEXPIRE', KEYS[2], ttl) == 0 then
    return redis.error_reply('STATELOST the store\'s marker key is gone: the server lost its keys')
  end
end
if raw then
  local a, b, c = string.match(raw, '(%d+) (%d+) (%d+)')
  level = tonumber(a)
  local ls, ln = tonumber(b), tonumber(c)
  if now_s < ls or (now_s == ls and now_n < ln) then s = ls; n = ln end
  local ds = s - ls
  if ds > 9e6 then elapsed = 8990000000000000 else elapsed = ds * 1e9 + (n - ln) end
elseif fill then
  level = cap
else
  level = 0
end
local room
if fill then
  local deficit = cap - level
  if deficit > 0 then
    if elapsed >= ceildiv(deficit, max) then level = cap else level = level + elapsed * max end
  end
  room = level
else
  if level > 0 then
    if elapsed >= ceildiv(level, max) then level = 0 else level = level - elapsed * max end
  end
  room = cap - level
end

-- The instant `x` ns after (s, n), as a pair.
local function plus(x)
  local q, r = divmod(x, E9)
  local pn = n + r
  if pn >= E9 then return s + q + 1, pn - E9 end
  return s + q, pn
end

-- Check, then take.
local passed, pass_s, pass_n = 0, -1, -1
local need = cost * unit
if cost <= burst then
  if need <= room then
    passed, pass_s, pass_n = 1, s, n
    room = room - need
    if fill then level = room else level = level + need end
  else
    pass_s, pass_n = plus(ceildiv(need - room, max))
  end
end

-- Save: the state, kept until the instant it is back to its full quota.
local wait = ceildiv(cap - room, max)
local reset_s, reset_n = plus(wait)
local mode = ARGV[4]
local value = string.format('%d %d %d', level, s, n)
if mode == 'abs' then
  if wait == 0 then
    redis.call('DEL', key)
  else
    local pxat = reset_s * 1000 + ceildiv(reset_n, 1000000)
    redis.call('SET', key, value, 'PXAT', string.format('%d', pxat))
  end
else
  redis.call('SET', key, value, 'PX', string.match(mode, '^ttl(%d+)$'))
end
local remaining = divmod(room, unit)
return {now_s, now_n, passed, pass_s, pass_n, remaining, reset_s, reset_n}
