-- The bucket family (token bucket, leaky bucket, GCRA) in exact integer arithmetic on
-- IEEE doubles (Redis 7 Lua 5.1). The Rust twin is src/algorithm/{bucket,token_bucket,
-- leaky_bucket,gcra}.rs; tests/redis_differential.rs checks they decide identically.
--
-- KEYS[1]  the key's state: "level last_s last_ns" (integers printed with %.0f, never
--          tostring, which keeps only 14 digits).
-- ARGV     max', unit', burst, cost, now_s, now_ns, dir, ttl
--   max', unit'  max_requests / g and window / g, where g = gcd(window, max_requests):
--                every level is a multiple of g, so dividing by it is exact.
--   cost         at most burst + 1 (the client refuses more before calling).
--   now_s, now_ns  the caller's instant as (seconds, ns < 1e9); '' = read server TIME.
--   dir          'fill': the level is tokens, refilled up to cap (token bucket);
--                'drain': the level is water (leaky bucket) or GCRA's scaled TAT - t,
--                drained down to 0. GCRA is this arithmetic exactly.
--   ttl          'abs': PEXPIREAT at the idle instant, DEL when idle (server time);
--                'none': never expire or delete (caller instants have no relation to
--                the server's clock, and deleting would forget `last`).
-- Checked in Rust when the limiter is built (a rule that breaks them is refused):
--   cap' + max(max', unit') <= 2^53, where cap' = burst * unit', and
--   ceil(cap' / max') <= ELAPSED_MAX (a full refill takes at most ~104 days).
-- So every value below is an integer < 2^53 and every division is corrected to exact.
-- Returns {allowed, remaining, retry (-1 = never), reset, ts, tn, s, n}: the waits are
-- from the clamped instant (ts, tn); (s, n) is the instant asked. The client adds
-- (ts, tn) - (s, n) in u128, so no sum near u64::MAX is ever formed in a double.
local max, unit, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local fill = ARGV[7] == 'fill'
local abs_ttl = ARGV[8] == 'abs'
local cap = burst * unit
local s, n
if ARGV[5] == '' then
  local t = redis.call('TIME'); s = tonumber(t[1]); n = tonumber(t[2]) * 1000
else
  s = tonumber(ARGV[5]); n = tonumber(ARGV[6])
end
-- exact floor division for integers a >= 0, b >= 1 with a + b <= 2^53
local function divmod(a, b)
  local q = math.floor(a / b); local r = a - q * b
  if r < 0 then q = q - 1; r = r + b elseif r >= b then q = q + 1; r = r - b end
  return q, r
end
local function ceildiv(a, b) local q, r = divmod(a, b); if r > 0 then q = q + 1 end; return q end
-- (9e6 s) * 1e9 + 1e9 < 2^53: longer gaps saturate here, which changes nothing because
-- a full refill (or drain) never takes longer (checked at construction).
local ELAPSED_MAX = 8990000000000000
local level, ls, ln
local st = redis.call('GET', KEYS[1])
if st then
  local a, b, c = string.match(st, '^(%d+) (%d+) (%d+)$')
  level, ls, ln = tonumber(a), tonumber(b), tonumber(c)
else
  if fill then level = cap else level = 0 end
  ls, ln = s, n
end
-- now = max(now, last): a backwards clock neither refills nor drains
local ts, tn = s, n
if s < ls or (s == ls and n < ln) then ts, tn = ls, ln end
local ds = ts - ls
local elapsed
if ds > 9e6 then elapsed = ELAPSED_MAX else elapsed = ds * 1e9 + (tn - ln) end
-- `room` is what a request can take: tokens (fill) or cap - water (drain). Bring the
-- level up to date; elapsed * max is formed only below the full-refill time, so it
-- stays under cap + max.
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
local allowed, retry = 0, -1
if cost <= burst then
  local need = cost * unit
  if need <= room then
    allowed = 1; retry = 0; room = room - need
    if fill then level = room else level = level + need end
  else
    retry = ceildiv(need - room, max)
  end
end
-- the wait until the key is back to its full quota: room = cap
local reset = ceildiv(cap - room, max)
if reset == 0 and abs_ttl then
  redis.call('DEL', KEYS[1]) -- idle: indistinguishable from fresh at any later instant
else
  redis.call('SET', KEYS[1], string.format('%.0f %.0f %.0f', level, ts, tn))
  if abs_ttl then
    -- idle at ts s + (tn + reset) ns; expire at the ceiling of that in ms: never before
    -- it (Redis deletes only when its clock, the one TIME reads, is past the mark).
    local ms = ts * 1000 + ceildiv(tn + reset, 1000000)
    redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', ms))
  end
end
local rem = divmod(room, unit)
return {allowed, rem, retry, reset, ts, tn, s, n}
