-- Sliding window log, server side: the log never leaves Redis.
-- KEYS[1] = list of "rel cost" entries, oldest first; KEYS[2] = hash {o_s, o_ns, last, total}
-- (both share the caller's hash tag). Instants are ns relative to the key's origin (o_s, o_ns),
-- exact while < 2^53 ns (104 days); the origin is rebased when the log is empty.
-- ARGV: max, W, cost (clamped to max+1), now_s, now_ns ('' = TIME), ttl_mode
-- Requires W <= 2^51 ns (26 days) and max < 2^53 (checked at construction).
local max, W, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local s, n
if ARGV[4] == '' then local t = redis.call('TIME'); s = tonumber(t[1]); n = tonumber(t[2]) * 1000
else s = tonumber(ARGV[4]); n = tonumber(ARGV[5]) end
local h = redis.call('HMGET', KEYS[2], 'o_s', 'o_ns', 'last', 'total')
local os_, on, last, total = tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
local function ceildiv(a, b) -- exact for integers with a + b <= 2^53
  local q = math.floor(a / b); local r = a - q * b
  if r < 0 then q = q - 1; r = r + b elseif r >= b then q = q + 1; r = r - b end
  if r > 0 then q = q + 1 end; return q
end
local LIM = 4503599627370496 -- 2^52: rebase before relative instants get near 2^53
local function rel(os_, on) local ds = s - os_; if ds > 4.5e6 then return nil end; return ds * 1e9 + (n - on) end
local now
if os_ then now = rel(os_, on) end
if (not os_) or (total == 0 and (now == nil or now < 0 or now > LIM)) then
  -- fresh key, or an empty log far from its origin: rebase at now
  os_, on, last, total, now = s, n, 0, 0, 0
  redis.call('DEL', KEYS[1])
end
if now == nil or now > LIM then return redis.error_reply('ratesim: key origin too old (log not empty for 52 days?)') end
local back = 0
if now < last then back = last - now; now = last end
-- expire: entries with rel + W <= now
while true do
  local e = redis.call('LINDEX', KEYS[1], 0)
  if not e then break end
  local at, c = string.match(e, '^(%d+) (%d+)$')
  at, c = tonumber(at), tonumber(c)
  if at + W > now then break end
  redis.call('LPOP', KEYS[1]); total = total - c
end
local allowed, retry = 0, -1
if cost <= max - total then
  allowed = 1; retry = 0
  if cost > 0 then
    local tail = redis.call('LINDEX', KEYS[1], -1)
    local tat, tc
    if tail then tat, tc = string.match(tail, '^(%d+) (%d+)$'); tat, tc = tonumber(tat), tonumber(tc) end
    if tat == now then redis.call('LSET', KEYS[1], -1, string.format('%.0f %.0f', now, tc + cost))
    else redis.call('RPUSH', KEYS[1], string.format('%.0f %.0f', now, cost)) end
    total = total + cost
  end
elseif cost <= max then
  -- walk from the oldest until enough cost has expired (O(entries needed), server side)
  local must = total - (max - cost)
  local i = 0
  while true do
    local chunk = redis.call('LRANGE', KEYS[1], i, i + 63)
    if #chunk == 0 then break end
    for _, e in ipairs(chunk) do
      local at, c = string.match(e, '^(%d+) (%d+)$'); at, c = tonumber(at), tonumber(c)
      if c >= must then retry = at + W - now; break end
      must = must - c
    end
    if retry >= 0 then break end
    i = i + 64
  end
end
local reset = 0
local newest = redis.call('LINDEX', KEYS[1], -1)
if newest then reset = tonumber(string.match(newest, '^(%d+)')) + W - now end
redis.call('HSET', KEYS[2], 'o_s', string.format('%.0f', os_), 'o_ns', string.format('%.0f', on),
  'last', string.format('%.0f', now), 'total', string.format('%.0f', total))
if ARGV[6] == 'abs' then
  if reset == 0 then redis.call('DEL', KEYS[1], KEYS[2]) else
    local ms = os_ * 1000 + ceildiv(on + now + reset, 1e6) -- on < 1e9, now <= 2^52, reset <= W <= 2^51: sum < 2^53
    redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', ms)); redis.call('PEXPIREAT', KEYS[2], string.format('%.0f', ms))
  end
end
return {allowed, max - total, retry, reset, back}
