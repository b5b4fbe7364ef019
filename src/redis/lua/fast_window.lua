-- The fast path of the fixed window and the sliding window counter (window.lua's
-- families, through main.lua, for one part deciding and writing), straight through
-- after fast_common.lua. ARGV[6] is 'fixed' or 'counter', ARGV[7], ARGV[8] max and W;
-- the bounds of window.lua hold (checked in Rust): max <= 2^52, W <= 2^52 ns.
local key = KEYS[1]
local max, w = tonumber(ARGV[7]), tonumber(ARGV[8])
local raw = redis.call('GET', key)
if not raw then
  local err = lost(1)
  if err then return err end
end
local wq, wr = divmod(w, E9) -- W as a pair

-- Fixed window. Key: "start_s start_ns count", start = k * W of the window counted; an
-- earlier window (a backwards clock) is treated as the state's own.
local function fixed()
  local start_s, start_n = minus(NOW_S, NOW_N, divmod(modw(NOW_S, NOW_N, w), E9))
  local count = 0
  if raw then
    local a, b, c = string.match(raw, '(%d+) (%d+) (%d+)')
    local ls, ln = tonumber(a), tonumber(b)
    if not before(ls, ln, start_s, start_n) then start_s, start_n, count = ls, ln, tonumber(c) end
  end
  local fin_s, fin_n = plus(start_s, start_n, w)
  local passed, pass_s, pass_n = 0, -1, -1
  if COST <= max then
    if COST <= max - count then
      passed, pass_s, pass_n = 1, NOW_S, NOW_N
      count = count + COST
    else
      pass_s, pass_n = fin_s, fin_n
    end
  end
  local reset_s, reset_n = fin_s, fin_n
  if count == 0 then reset_s, reset_n = NOW_S, NOW_N end
  local value = string.format('%d %d %d', start_s, start_n, count)
  -- A denial in the window the state counts leaves it as it was, expiry included (the
  -- window's end): on the server's clock it writes nothing, so an attacked key costs no
  -- write to replicate or log. A caller's instant writes to renew the safety TTL.
  if not (ABS and passed == 0 and value == raw) then
    persist(key, value, count == 0, reset_s, reset_n)
  end
  return {NOW_S, NOW_N, passed, pass_s, pass_n, max - count, reset_s, reset_n}
end

-- min(W, floor(h * W / prev)) for prev >= 1 (window.lua's shrink).
local function shrink(h, prev)
  if h >= prev then return w end
  local qw, rw = divmod(w, prev)
  local q = muldiv(h, rw, prev)
  return h * qw + q
end

-- The least elapsed time in a window holding prev and count at which the cost fits, if
-- any (window.lua's earliest).
local function earliest(prev, count)
  local headroom = max - count - COST
  if headroom < 0 then return nil end
  if prev == 0 then return 0 end
  local e = w - shrink(headroom, prev)
  if e < w then return e end
  return nil
end

-- Sliding window counter. Key: "last_s last_ns count prev"; admits when
-- prev * (W - e) + (count + cost) * W <= max * W, e = ns elapsed in the window.
local function counter()
  local ls, ln, count, prev = NOW_S, NOW_N, 0, 0
  if raw then
    local a, b, c, d = string.match(raw, '(%d+) (%d+) (%d+) (%d+)')
    ls, ln, count, prev = tonumber(a), tonumber(b), tonumber(c), tonumber(d)
  end
  local now_s, now_n = NOW_S, NOW_N
  if before(now_s, now_n, ls, ln) then now_s, now_n = ls, ln end
  local e = modw(now_s, now_n, w)
  local start_s, start_n = minus(now_s, now_n, divmod(e, E9))
  -- last's window is now's, the one before (start >= W there), or older
  if before(ls, ln, start_s, start_n) then
    local ps, pn = minus(start_s, start_n, wq, wr)
    if before(ls, ln, ps, pn) then prev, count = 0, 0 else prev, count = count, 0 end
  end
  local next_s, next_n = plus(start_s, start_n, w)
  local passed, pass_s, pass_n = 0, -1, -1
  if COST <= max then
    local after = count + COST
    if after <= max and (prev == 0 or w - e <= shrink(max - after, prev)) then
      passed, pass_s, pass_n = 1, NOW_S, NOW_N
      count = after
    else
      -- this window (prev decays), the next (today's count decays), or the one after
      local x = earliest(prev, count)
      if x then
        if x < e then x = e end
        pass_s, pass_n = plus(start_s, start_n, x)
      else
        x = earliest(count, 0)
        if x then pass_s, pass_n = plus(next_s, next_n, x)
        else pass_s, pass_n = plus(next_s, next_n, w) end
      end
    end
  end
  -- (max - count) - ceil(prev * (W - e) / W), at least 0
  local d = w - e
  local used = prev
  if d ~= w then
    local qp, rp = divmod(prev, w)
    local q, r = muldiv(rp, d, w)
    used = qp * d + q
    if r > 0 then used = used + 1 end
  end
  local remaining = max - count - used
  if remaining < 0 then remaining = 0 end
  local reset_s, reset_n, idle = NOW_S, NOW_N, false
  if count > 0 then reset_s, reset_n = plus(next_s, next_n, w)
  elseif prev > 0 then reset_s, reset_n = next_s, next_n
  else idle = true end
  persist(key, string.format('%d %d %d %d', now_s, now_n, count, prev), idle, reset_s, reset_n)
  return {NOW_S, NOW_N, passed, pass_s, pass_n, remaining, reset_s, reset_n}
end

if ARGV[6] == 'fixed' then return fixed() end
return counter()
