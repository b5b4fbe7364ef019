-- The fast path of the sliding window log (log.lua through main.lua, for one part
-- deciding and writing), straight through after fast_common.lua. KEYS: the state
-- "total last_s last_ns", the list of entries "at_s at_ns cost" (oldest first, instants
-- strictly increasing), then (optional) the marker. ARGV[6] = 'log', ARGV[7] max,
-- ARGV[8], ARGV[9] W as (s, ns). Checked in Rust: max <= 2^52.
local key, list = KEYS[1], KEYS[2]
local max, w_s, w_n = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local raw = redis.call('GET', key)
if not raw then
  local err = lost(2)
  if err then return err end
end
local total, now_s, now_n = 0, NOW_S, NOW_N
if raw then
  local a, b, c = string.match(raw, '(%d+) (%d+) (%d+)')
  total = tonumber(a)
  local ls, ln = tonumber(b), tonumber(c)
  if before(now_s, now_n, ls, ln) then now_s, now_n = ls, ln end
end
-- (s, n) + W
local function expiry(s, n)
  s, n = s + w_s, n + w_n
  if n >= E9 then return s + 1, n - E9 end
  return s, n
end
local function entry(e)
  local a, b, c = string.match(e, '(%d+) (%d+) (%d+)')
  return tonumber(a), tonumber(b), tonumber(c)
end

-- An entry stops counting exactly W after it was admitted: pop the expired ones.
local head = redis.call('LINDEX', list, 0)
while head do
  local s, n, c = entry(head)
  local xs, xn = expiry(s, n)
  if before(now_s, now_n, xs, xn) then break end
  redis.call('LPOP', list)
  total = total - c
  head = redis.call('LINDEX', list, 0)
end
local new_s, new_n, new_c
if head then new_s, new_n, new_c = entry(redis.call('LINDEX', list, -1)) end

local passed, pass_s, pass_n = 0, -1, -1
if COST <= max then
  if COST <= max - total then
    passed, pass_s, pass_n = 1, NOW_S, NOW_N
  else
    -- when enough of the oldest entries have expired to make room
    local must_free = total - (max - COST)
    local i = 0
    while pass_s == -1 do
      local chunk = redis.call('LRANGE', list, i, i + 31)
      if #chunk == 0 then break end -- not reached: the entries hold total
      for _, e in ipairs(chunk) do
        local s, n, c = entry(e)
        if c >= must_free then pass_s, pass_n = expiry(s, n); break end
        must_free = must_free - c
      end
      i = i + 32
    end
  end
end

local grew = passed == 1 and COST > 0
if grew then
  if new_s == now_s and new_n == now_n then
    new_c = new_c + COST
    redis.call('LSET', list, -1, string.format('%d %d %d', now_s, now_n, new_c))
  else
    new_s, new_n, new_c = now_s, now_n, COST
    redis.call('RPUSH', list, string.format('%d %d %d', now_s, now_n, COST))
  end
  total = total + COST
end

local reset_s, reset_n, idle = NOW_S, NOW_N, true
if new_s then reset_s, reset_n = expiry(new_s, new_n); idle = false end
persist(key, string.format('%d %d %d', total, now_s, now_n), idle, reset_s, reset_n)
if TTL then
  redis.call('PEXPIRE', list, TTL)
elseif not idle and grew then
  -- The list expires with its newest entry: only an entry this call logged moves that
  -- (log.lua's save).
  redis.call('PEXPIREAT', list, pxat(reset_s, reset_n))
end
return {NOW_S, NOW_N, passed, pass_s, pass_n, max - total, reset_s, reset_n}
