-- The bucket family (token bucket, leaky bucket, GCRA). The Rust twin is
-- src/algorithm/{bucket,token_bucket,leaky_bucket,gcra}.rs.
--
-- Key: "level last_s last_ns". Params (4): max', unit', burst, dir.
--   max', unit'  max_requests / g and window / g, g = gcd(window, max_requests): every
--                level is a multiple of g, so dividing by it is exact.
--   dir          'fill': the level is tokens, refilled up to cap (token bucket);
--                'drain': the level is water (leaky bucket) or GCRA's scaled TAT - t,
--                drained down to 0. GCRA is this arithmetic exactly.
-- Checked in Rust when the limiter is built (a rule that breaks them is refused):
--   cap' + max(max', unit') <= 2^53, where cap' = burst * unit', and
--   ceil(cap' / max') <= ELAPSED_MAX (a full refill takes at most ~104 days).
-- So every value below is an integer < 2^53 and every division is exact.
local bucket = {nkeys = 1, nargs = 4}

function bucket.load(keys, k, argv, a)
  local st = {key = keys[k], max = tonumber(argv[a]), unit = tonumber(argv[a + 1]),
              burst = tonumber(argv[a + 2]), fill = argv[a + 3] == 'fill'}
  local cap = st.burst * st.unit
  st.cap = cap
  local level, last
  local raw = redis.call('GET', st.key)
  if raw then
    local v = parse(raw); level = v[1]; last = {v[2], v[3]}
  else
    if st.fill then level = cap else level = 0 end
    last = NOW
  end
  -- now = max(now, last): a backwards clock neither refills nor drains
  st.now = latest(NOW, last)
  local elapsed = span(last, st.now)
  -- Bring the level up to date; elapsed * max is formed only below the full-refill
  -- time, so it stays under cap + max. `room` is what a request can take.
  if st.fill then
    local deficit = cap - level
    if deficit > 0 then
      if elapsed >= ceildiv(deficit, st.max) then level = cap else level = level + elapsed * st.max end
    end
    st.room = level
  else
    if level > 0 then
      if elapsed >= ceildiv(level, st.max) then level = 0 else level = level - elapsed * st.max end
    end
    st.room = cap - level
  end
  st.level = level
  return st
end

-- Whether `cost` passes now; if not, the instant it would (nil: never).
function bucket.check(st, cost)
  if cost > st.burst then return false, nil end
  local need = cost * st.unit
  if need <= st.room then return true, st.now end
  return false, plus(st.now, ceildiv(need - st.room, st.max))
end

function bucket.take(st, cost)
  local need = cost * st.unit
  st.room = st.room - need
  if st.fill then st.level = st.room else st.level = st.level + need end
end

function bucket.remaining(st) local q = divmod(st.room, st.unit); return q end

-- The instant the key is back to its full quota (room = cap), and whether it is now.
function bucket.reset(st)
  local wait = ceildiv(st.cap - st.room, st.max)
  return plus(st.now, wait), wait == 0
end

function bucket.save(st)
  local reset, idle = bucket.reset(st)
  persist(st.key, fmt(st.level, st.now[1], st.now[2]), idle, reset)
end
FAMILIES.bucket = bucket
