-- The sliding window log. The Rust twin is src/algorithm/sliding_window_log.rs.
--
-- Keys (2): "total last_s last_ns", and a list of admitted entries "at_s at_ns cost",
-- oldest first, instants strictly increasing (requests admitted at one instant share an
-- entry, so it holds at most max entries). The log stays in Redis: a call pops the
-- entries that expired, touches the newest, and reads from the oldest only on a denial,
-- 32 at a time, as far as the wait needs.
-- Params (3): max, W as (W_s, W_ns): any window, since expiries are pair sums. Checked
-- in Rust: max <= 2^52.
local log = {nkeys = 2, nargs = 3}

local function entry(raw) local v = parse(raw); return {{v[1], v[2]}, v[3]} end

function log.load(keys, k, argv, a)
  local st = {key = keys[k], list = keys[k + 1], max = tonumber(argv[a]),
              w = {tonumber(argv[a + 1]), tonumber(argv[a + 2])}}
  local total, last = 0, NOW
  local raw = redis.call('GET', st.key)
  if raw then local v = parse(raw); total = v[1]; last = {v[2], v[3]} end
  st.now = latest(NOW, last)
  -- an entry stops counting exactly W after it was admitted; a dry call (which must
  -- leave the log as it found it) steps over the expired entries instead of popping
  st.skip = 0
  while true do
    local head = redis.call('LINDEX', st.list, st.skip)
    if not head then break end
    local e = entry(head)
    if before(st.now, add(e[1], st.w)) then break end
    if DRY then st.skip = st.skip + 1 else redis.call('LPOP', st.list) end
    total = total - e[2]
  end
  st.total = total
  local newest = redis.call('LINDEX', st.list, -1)
  if newest and (st.skip == 0 or redis.call('LLEN', st.list) > st.skip) then
    st.newest = entry(newest)
  end
  return st
end

function log.check(st, cost)
  if cost > st.max then return false, nil end
  if cost <= st.max - st.total then return true, NOW end
  -- wait until enough of the oldest entries have expired to make room
  local must_free = st.total - (st.max - cost)
  local i = st.skip
  while true do
    local chunk = redis.call('LRANGE', st.list, i, i + 31)
    if #chunk == 0 then return false, nil end -- not reached: the entries hold total
    for _, raw in ipairs(chunk) do
      local e = entry(raw)
      if e[2] >= must_free then return false, add(e[1], st.w) end
      must_free = must_free - e[2]
    end
    i = i + 32
  end
end

function log.take(st, cost)
  if cost == 0 then return end
  if st.newest and same(st.newest[1], st.now) then
    st.newest[2] = st.newest[2] + cost
    redis.call('LSET', st.list, -1, fmt(st.now[1], st.now[2], st.newest[2]))
  else
    st.newest = {st.now, cost}
    redis.call('RPUSH', st.list, fmt(st.now[1], st.now[2], cost))
  end
  st.total = st.total + cost
  st.grew = true
end

function log.remaining(st) return st.max - st.total end

function log.reset(st)
  if st.newest then return add(st.newest[1], st.w), false end
  return NOW, true
end

function log.save(st)
  local reset, idle = log.reset(st)
  persist(st.key, fmt(st.total, st.now[1], st.now[2]), idle, reset)
  -- The list expires with its newest entry: only an entry this call logged moves that.
  if ABS and not idle and st.grew then redis.call('PEXPIREAT', st.list, pxat(reset)) end
  if SAFE then redis.call('PEXPIRE', st.list, SAFE) end
end
FAMILIES.log = log
