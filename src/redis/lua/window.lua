-- The fixed window and the sliding window counter. The Rust twins are
-- src/algorithm/{fixed_window,sliding_window_counter}.rs.
--
-- Params (2): max, W. Checked in Rust when the limiter is built: max <= 2^52 and
-- W <= 2^52 ns (~52 days), so counts, count + cost, window offsets and muldiv's
-- operands are exact. Windows are aligned to multiples of W from instant 0, found
-- with modw on the (s, ns) pair.

-- Fixed window. Key: "start_s start_ns count", start = k * W of the window counted.
local fixed = {nkeys = 1, nargs = 2}

function fixed.load(keys, k, argv, a)
  local st = {key = keys[k], max = tonumber(argv[a]), w = tonumber(argv[a + 1])}
  st.start = window_start(NOW, st.w)
  st.count = 0
  local raw = redis.call('GET', st.key)
  st.raw = raw
  if raw then
    local v = parse(raw)
    -- an earlier window (a backwards clock) is treated as the state's own
    if not before({v[1], v[2]}, st.start) then st.start = {v[1], v[2]}; st.count = v[3] end
  end
  st.finish = plus(st.start, st.w)
  return st
end

function fixed.check(st, cost)
  if cost > st.max then return false, nil end
  if cost <= st.max - st.count then return true, NOW end
  return false, st.finish
end

function fixed.take(st, cost) st.count = st.count + cost end
function fixed.remaining(st) return st.max - st.count end
function fixed.reset(st)
  if st.count == 0 then return NOW, true end
  return st.finish, false
end

function fixed.save(st)
  local reset, idle = fixed.reset(st)
  local value = fmt(st.start[1], st.start[2], st.count)
  -- A state left as it was read (a denial in its window) has its key and expiry (the
  -- window's end) already: on the server's clock nothing is written (fast_window.lua).
  if ABS and value == st.raw then return end
  persist(st.key, value, idle, reset)
end

-- Sliding window counter. Key: "last_s last_ns count prev". Admits when
-- prev * (W - e) + (count + cost) * W <= max * W, e = ns elapsed in the window; the
-- products would pass 2^53, so they are compared as d <= floor(h * W / prev), d = W - e,
-- h = max - count - cost, with muldiv.
local counter = {nkeys = 1, nargs = 2}

function counter.load(keys, k, argv, a)
  local st = {key = keys[k], max = tonumber(argv[a]), w = tonumber(argv[a + 1])}
  local last, count, prev = NOW, 0, 0
  local raw = redis.call('GET', st.key)
  if raw then local v = parse(raw); last = {v[1], v[2]}; count = v[3]; prev = v[4] end
  st.now = latest(NOW, last)
  st.e = modw(st.now, st.w)
  st.start = sub(st.now, at(st.e))
  -- last <= now, so last's window is now's when last >= its start, and the one before
  -- when last >= start - W (start > last >= 0 there, so start >= W): no second t mod W.
  if not before(last, st.start) then
    st.prev, st.count = prev, count
  elseif not before(last, sub(st.start, at(st.w))) then
    st.prev, st.count = count, 0 -- the current window became the previous one
  else
    st.prev, st.count = 0, 0     -- skipped a whole window: both are stale
  end
  return st
end

-- min(W, floor(h * W / prev)) for prev >= 1: W = prev * qw + rw, and h * qw < W when
-- h < prev.
local function shrink(st, h, prev)
  if h >= prev then return st.w end
  local qw, rw = divmod(st.w, prev)
  local q = muldiv(h, rw, prev)
  return h * qw + q
end

local function fits(st, prev, count, e, cost)
  local after = count + cost
  if after > st.max then return false end
  if prev == 0 then return true end
  return st.w - e <= shrink(st, st.max - after, prev)
end

-- The least elapsed time in a window holding prev and count at which cost fits, if any.
local function earliest(st, prev, count, cost)
  local headroom = st.max - count - cost
  if headroom < 0 then return nil end
  if prev == 0 then return 0 end
  local e = st.w - shrink(st, headroom, prev)
  if e < st.w then return e end
  return nil
end

function counter.check(st, cost)
  if cost > st.max then return false, nil end
  if fits(st, st.prev, st.count, st.e, cost) then return true, NOW end
  -- This window (prev decays), the next (today's count decays), or the one after.
  local e = earliest(st, st.prev, st.count, cost)
  if e then return false, plus(st.start, math.max(e, st.e)) end
  local next = plus(st.start, st.w)
  e = earliest(st, st.count, 0, cost)
  if e then return false, plus(next, e) end
  return false, plus(next, st.w)
end

function counter.take(st, cost) st.count = st.count + cost end

-- (max - count) - ceil(prev * (W - e) / W), at least 0.
function counter.remaining(st)
  local d = st.w - st.e
  local used
  if d == st.w then
    used = st.prev
  else
    local qp, rp = divmod(st.prev, st.w)
    local q, r = muldiv(rp, d, st.w)
    used = qp * d + q
    if r > 0 then used = used + 1 end
  end
  return math.max(0, st.max - st.count - used)
end

function counter.reset(st)
  if st.count > 0 then return plus(plus(st.start, st.w), st.w), false end
  if st.prev > 0 then return plus(st.start, st.w), false end
  return NOW, true
end

function counter.save(st)
  local reset, idle = counter.reset(st)
  persist(st.key, fmt(st.now[1], st.now[2], st.count, st.prev), idle, reset)
end
FAMILIES.fixed = fixed
FAMILIES.counter = counter
