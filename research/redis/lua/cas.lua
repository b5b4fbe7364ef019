-- Generic compare-and-set over opaque state bytes (the Rust algorithm encodes them).
-- KEYS[1]; ARGV: expected ('' = key absent), new ('' = delete), pexpireat_ms ('' = none)
-- Returns {1} on success, else {0, current, time_s, time_us}: the caller retries from
-- that without another read.
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then
  local t = redis.call('TIME')
  return {0, cur, t[1], t[2]}
end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else
  redis.call('SET', KEYS[1], ARGV[2])
  if ARGV[3] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[3]) end
end
return {1}
