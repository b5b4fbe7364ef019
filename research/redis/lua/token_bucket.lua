-- Token bucket, exact integer arithmetic in IEEE doubles (Redis 7.0 Lua 5.1).
-- KEYS[1] state key. ARGV: max, unit (= W ns), burst, cost, now_s, now_ns, ttl_mode
--   now_s = '' -> read server TIME (production); else caller instant split as (s, ns<1e9).
--   ttl_mode: 'abs' -> PEXPIREAT at the idle instant (server time); 'none' -> no TTL.
-- Construction guarantees (checked in Rust, else the rule is refused):
--   cap = burst*unit and cap + max <= 2^53; full refill ceil(cap/max) <= 8.99e15 ns.
-- The caller clamps cost to min(cost, burst + 1). Every value below is an integer < 2^53.
-- State: "level last_s last_ns" (integers printed with %.0f: tostring would round to 14 digits).
-- Returns {allowed, remaining, retry_wait (-1 = never), reset_wait, ts, tn}: waits are from the
-- clamped instant (ts, tn); the caller adds (ts,tn) - now in u128, so no sum here can overflow.
local max, unit, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local cap = burst * unit
local s, n
if ARGV[5] == '' then
  local t = redis.call('TIME'); s = tonumber(t[1]); n = tonumber(t[2]) * 1000
else
  s = tonumber(ARGV[5]); n = tonumber(ARGV[6])
end
local function divmod(a, b) -- exact floor division for integers 0 <= a, b >= 1, a + b <= 2^53
  local q = math.floor(a / b); local r = a - q * b
  if r < 0 then q = q - 1; r = r + b elseif r >= b then q = q + 1; r = r - b end
  return q, r
end
local function ceildiv(a, b) local q, r = divmod(a, b); if r > 0 then q = q + 1 end; return q end
local ELAPSED_MAX = 8.99e15 -- 2^53 > (9e6 s)*1e9 + 1e9; longer gaps saturate here
local level, ls, ln
local st = redis.call('GET', KEYS[1])
if st then
  local a, b, c = string.match(st, '^(%d+) (%d+) (%d+)$')
  level, ls, ln = tonumber(a), tonumber(b), tonumber(c)
else
  level, ls, ln = cap, s, n
end
-- now = max(now, last): a backwards clock neither refills nor drains
local ts, tn = s, n
if s < ls or (s == ls and n < ln) then ts, tn = ls, ln end
local ds = ts - ls
local elapsed
if ds > 9e6 then elapsed = ELAPSED_MAX else elapsed = ds * 1e9 + (tn - ln) end
local deficit = cap - level
if deficit > 0 then
  if elapsed >= ceildiv(deficit, max) then level = cap else level = level + elapsed * max end
end
local allowed, retry = 0, -1
if cost <= burst then
  local need = cost * unit
  if need <= level then
    allowed = 1; retry = 0; level = level - need
  else
    retry = ceildiv(need - level, max)
  end
end
local reset = ceildiv(cap - level, max)
if reset == 0 and ARGV[7] == 'abs' then
  redis.call('DEL', KEYS[1]) -- idle: indistinguishable from fresh for any later instant
else
  redis.call('SET', KEYS[1], string.format('%.0f %.0f %.0f', level, ts, tn))
  if ARGV[7] == 'abs' then
    -- idle at (ts s + tn ns + reset ns); expire at ceil(that / 1 ms): never before it
    local ms = ts * 1000 + ceildiv(tn + reset, 1e6)
    redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', ms))
  end
end
local rem = divmod(level, unit)
return {allowed, rem, retry, reset, ts, tn}
