-- What every family shares: exact integer arithmetic on IEEE doubles (Redis 7 runs Lua
-- 5.1: numbers are doubles, integers exact only up to 2^53), instants as (s, ns) pairs,
-- the instant of the call, and how a key is kept or expired. The families
-- (bucket.lua, window.lua, log.lua) a limiter uses and the dispatcher (main.lua) follow
-- this text in one script; src/redis/script.rs joins them.
--
-- Instants are pairs {s, n}, 0 <= n < 1e9: u64::MAX ns is 1.8e10 s, so every pair and
-- every sum of two pairs is exact, where one double of ns would not be (unix time in ns
-- is 1.8e18 > 2^53). Integers are printed with %.0f, never tostring (14 digits only).
local E9 = 1000000000
-- The longest span (ns) formed as one number: (9e6 s) * 1e9 + 1e9 < 2^53. Longer spans
-- saturate here; a family that measures spans refuses rules that would need more.
local ELAPSED_MAX = 8990000000000000

-- floor(a / b) and a mod b, exact for integers a >= 0, b >= 1 with a + b <= 2^53.
local function divmod(a, b)
  local q = math.floor(a / b); local r = a - q * b
  if r < 0 then q = q - 1; r = r + b elseif r >= b then q = q + 1; r = r - b end
  return q, r
end
local function ceildiv(a, b) local q, r = divmod(a, b); if r > 0 then q = q + 1 end; return q end

-- floor(a * b / m) and a * b mod m for integers 0 <= a < 2^53, 0 <= b < m <= 2^52,
-- by shift-and-add over a's bits, so no intermediate exceeds 2m <= 2^53. The remainder
-- is always exact; the quotient only while a * b / m < 2^53 (callers ensure it or
-- ignore it).
local function muldiv(a, b, m)
  local bits = {}
  while a > 0 do local h = math.floor(a / 2); bits[#bits + 1] = a - 2 * h; a = h end
  local q, r = 0, 0
  for i = #bits, 1, -1 do
    q = q * 2; r = r * 2
    if r >= m then r = r - m; q = q + 1 end
    if bits[i] == 1 then
      r = r + b
      if r >= m then r = r - m; q = q + 1 end
    end
  end
  return q, r
end

-- Pairs.
local function at(x) local q, r = divmod(x, E9); return {q, r} end -- x + 1e9 <= 2^53
local function add(p, q)
  local n = p[2] + q[2]
  if n >= E9 then return {p[1] + q[1] + 1, n - E9} end
  return {p[1] + q[1], n}
end
local function sub(p, q) -- p >= q
  local n = p[2] - q[2]
  if n < 0 then return {p[1] - q[1] - 1, n + E9} end
  return {p[1] - q[1], n}
end
local function plus(p, x) return add(p, at(x)) end
local function before(p, q) return p[1] < q[1] or (p[1] == q[1] and p[2] < q[2]) end
local function same(p, q) return p[1] == q[1] and p[2] == q[2] end
local function latest(p, q) if before(p, q) then return q end; return p end
-- q - p in ns for p <= q, saturating at ELAPSED_MAX.
local function span(p, q)
  local ds = q[1] - p[1]
  if ds > 9e6 then return ELAPSED_MAX end
  return ds * 1e9 + (q[2] - p[2])
end
-- p mod w for w <= 2^52: (s * 1e9 + n) mod w without forming s * 1e9.
local function modw(p, w)
  local c = E9
  if w <= E9 then local _, r = divmod(E9, w); c = r end
  local _, r1 = muldiv(p[1], c, w)
  local _, r2 = divmod(p[2], w)
  local r = r1 + r2
  if r >= w then r = r - w end
  return r
end
-- The start of the aligned window of length w (<= 2^52 ns) holding p.
local function window_start(p, w) return sub(p, at(modw(p, w))) end
local function fmt(...)
  local out = {}
  for i, v in ipairs({...}) do out[i] = string.format('%.0f', v) end
  return table.concat(out, ' ')
end
local function parse(raw)
  local out = {}
  for v in string.gmatch(raw, '%d+') do out[#out + 1] = tonumber(v) end
  return out
end

-- The instant of the call, and the key lifetime mode. ARGV[2], ARGV[3]: the caller's
-- instant (s, ns < 1e9), or '' to read the server's TIME (microseconds). ARGV[4]:
-- 'abs' = server time: PEXPIREAT at the idle instant, DEL when already idle; 'none' =
-- caller instants: never expire or delete (fake time has no relation to the server's
-- clock, and deleting would forget the latest instant a backwards clock clamps to);
-- 'peek' = caller instant, decide but write nothing (what the call would answer);
-- 'evict' = caller instant, write nothing, but DEL every key when every part is idle
-- (the in-memory limiter's evict_idle, for the simulator's fake clock).
local NOW
if ARGV[2] == '' then
  local t = redis.call('TIME'); NOW = {tonumber(t[1]), tonumber(t[2]) * 1000}
else
  NOW = {tonumber(ARGV[2]), tonumber(ARGV[3])}
end
local ABS = ARGV[4] == 'abs'
-- 'ttl<ms>' = caller instants with a safety TTL: every write sets PX <ms> (never
-- deleted on idleness, for the reason 'none' gives), so a key left by a killed process
-- expires on its own.
local SAFE = string.match(ARGV[4], '^ttl(%d+)$')
-- Nothing is written: a peek, or an eviction's look at the states.
local DRY = ARGV[4] == 'peek' or ARGV[4] == 'evict'

-- The ceiling of p in ms: Redis deletes a key only once its clock (the one TIME reads)
-- is past the mark, so the key outlives p, never the reverse.
local function pxat(p) return string.format('%.0f', p[1] * 1000 + ceildiv(p[2], 1000000)) end

-- Stores `value` at `key` after a decision. Server time: deleted when `idle` (the state
-- equals a fresh one from now on), else kept until the instant `idle_at` it will.
local function persist(key, value, idle, idle_at)
  if DRY then return end
  if SAFE then
    redis.call('SET', key, value, 'PX', SAFE)
  elseif not ABS then
    redis.call('SET', key, value)
  elseif idle then
    redis.call('DEL', key)
  else
    redis.call('SET', key, value, 'PXAT', pxat(idle_at))
  end
end

-- The families this script holds, by the name the dispatcher receives; each family's
-- file registers itself. A limiter's script holds only the families its parts use, so
-- a call defines no function it does not need.
local FAMILIES = {}
