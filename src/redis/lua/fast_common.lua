-- What the straight-through scripts of the windows and the log share (fast_window.lua,
-- fast_log.lua follow this text; src/redis/script.rs joins them). The same exact
-- integer arithmetic on doubles as common.lua, without its pair tables: an instant is
-- two locals (s, ns < 1e9), integers are printed with %d (exact for the integers < 2^53
-- used here; %.0f costs twice as much) and every call of these scripts writes.
--
-- KEYS: the part's keys, then (optional) the store's marker. ARGV: cost, now_s, now_ns
-- ('' '' = the server's TIME), mode ('abs' or 'ttl<ms>'), detail ('0'), the family's
-- name and params, as main.lua takes them. The reply is main.lua's for one part:
-- {now_s, now_ns, passed, pass_s, pass_ns, remaining, reset_s, reset_ns}.
local E9 = 1000000000
local floor = math.floor
-- floor(a / b) and a mod b, exact for integers a >= 0, b >= 1 with a + b <= 2^53.
local function divmod(a, b)
  local q = floor(a / b); local r = a - q * b
  if r < 0 then q = q - 1; r = r + b elseif r >= b then q = q + 1; r = r - b end
  return q, r
end
local function ceildiv(a, b) local q, r = divmod(a, b); if r > 0 then q = q + 1 end; return q end

-- floor(a * b / m) and a * b mod m for integers 0 <= a < 2^53, 0 <= b < m <= 2^52
-- (common.lua's muldiv): one division when the product is exact, else common.lua's
-- shift-and-add over a's bits, where no intermediate exceeds 2m <= 2^53.
local function muldiv(a, b, m)
  local p = a * b
  if p + m < 9007199254740992 then return divmod(p, m) end
  local bits = {}
  while a > 0 do local h = floor(a / 2); bits[#bits + 1] = a - 2 * h; a = h end
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

-- (s * 1e9 + n) mod w for w <= 2^52 without forming s * 1e9 (common.lua's modw). s is
-- taken in base-2^k digits, k = 51 - e where w < 2^e, so r * 2^k + digit * c < 2^52
-- and every step is one exact divmod; for w >= 2^49 (k < 2) it is muldiv's bit by bit.
local function modw(s, n, w)
  local c = E9
  if w <= E9 then local _, r = divmod(E9, w); c = r end
  local r1
  local _, e = math.frexp(w)
  if s * c + w < 9007199254740992 or e > 49 then
    local _, r = muldiv(s, c, w); r1 = r
  else
    local base = 2 ^ (51 - e)
    local digits = {}
    while s > 0 do local h = floor(s / base); digits[#digits + 1] = s - h * base; s = h end
    r1 = 0
    for i = #digits, 1, -1 do local _, r = divmod(r1 * base + digits[i] * c, w); r1 = r end
  end
  local _, r2 = divmod(n, w)
  local r = r1 + r2
  if r >= w then r = r - w end
  return r
end

-- Pairs as two numbers: p + x ns (x + 1e9 <= 2^53), and p - q (p >= q).
local function plus(s, n, x)
  local q, r = divmod(x, E9)
  n = n + r
  if n >= E9 then return s + q + 1, n - E9 end
  return s + q, n
end
local function minus(s, n, qs, qn)
  n = n - qn
  if n < 0 then return s - qs - 1, n + E9 end
  return s - qs, n
end
local function before(s, n, qs, qn) return s < qs or (s == qs and n < qn) end

local NOW_S, NOW_N
if ARGV[2] == '' then
  local t = redis.call('TIME'); NOW_S = tonumber(t[1]); NOW_N = tonumber(t[2]) * 1000
else
  NOW_S = tonumber(ARGV[2]); NOW_N = tonumber(ARGV[3])
end
local ABS = ARGV[4] == 'abs'
local TTL = string.match(ARGV[4], '^ttl(%d+)$')
local COST = tonumber(ARGV[1])

-- The store's marker (the last key, when there is one past `nkeys`) is checked and
-- renewed only by a call that finds its state missing: a state that is there was not
-- lost, and after a FLUSHALL or a restart every state is missing, so the first call
-- after one still finds the marker gone. Returns the error reply, or nil.
local function lost(nkeys)
  if #KEYS <= nkeys then return nil end
  local ttl = 3600000
  if ABS then ttl = 86400000 end
  if redis.call('PEXPIRE', KEYS[#KEYS], ttl) == 0 then
    return redis.error_reply('STATELOST the store\'s marker key is gone: the server lost its keys')
  end
  return nil
end

-- The ceiling of (s, n) in ms, printed (common.lua's pxat).
local function pxat(s, n) return string.format('%d', s * 1000 + ceildiv(n, 1000000)) end

-- common.lua's persist for a call that writes: server time deletes an idle state and
-- keeps the others until their idle instant; a caller's instant sets the safety TTL.
local function persist(key, value, idle, reset_s, reset_n)
  if TTL then
    redis.call('SET', key, value, 'PX', TTL)
  elseif idle then
    redis.call('DEL', key)
  else
    redis.call('SET', key, value, 'PXAT', pxat(reset_s, reset_n))
  end
end
