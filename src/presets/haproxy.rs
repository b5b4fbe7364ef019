//! The `haproxy` preset: a stick table storing `http_req_rate(period)` and the rule
//! `http-request deny if { sc_http_req_rate(0) gt N }`, as HAProxy 2.6 decides it.
//!
//! Modelled on HAProxy's frequency counter (`include/haproxy/freq_ctr.h`,
//! `update_freq_ctr_period`; `src/freq_ctr.c`, `freq_ctr_total`) and the stick-table
//! actions (`src/http_act.c`, `http_action_track_sc`; `src/stick_table.c`,
//! `smp_fetch_sc_http_req_rate`), read, not copied:
//! - **Millisecond ticks.** HAProxy 2.6's clock is `now_ms`, whole milliseconds of the
//!   wall clock (`clock_init_process_date` starts it at the date's milliseconds, with
//!   no offset); an instant `t` here is millisecond `floor((t + phase) / 1 ms)`, where
//!   `phase` is where t = 0 lies in a pair of wall-clock milliseconds
//!   ([`Haproxy::at`]): that keeps both the millisecond grid and the parity of each
//!   millisecond (see the next point). [`Haproxy::new`] puts t = 0 on an even one.
//! - **A counter per period, not a sliding window.** Per key the table keeps `curr`
//!   (hits in the current period), `prev` (hits in the previous one) and `tick`, the
//!   period's start. A hit at millisecond `now` with `now − tick ≥ period` rotates:
//!   `prev = curr`, `curr = 0`, `tick += period`, and when `now − tick ≥ period` still
//!   (two periods missed) `prev = 0`, `tick = now`. The stored tick is always made even
//!   (`tick & ~1`, the low bit is HAProxy's lock bit), so an odd period drifts one
//!   millisecond earlier at every rotation. A key's first hit starts a period at its own
//!   (even) millisecond.
//! - **The rate read is `prev` weighted by what is left of the period.**
//!   `sc_http_req_rate = floor((prev · remain + curr · period) / period)` with
//!   `remain = tick + period − now` in milliseconds.
//! - **Every request is counted, refused ones too.** `track-sc0` adds the request to
//!   `curr` before the `deny` rule reads the rate, so the request is refused when the
//!   rate *including itself* exceeds N, and a refused request still weighs on the next
//!   ones (a client that keeps retrying stays refused).
//!
//! A request's cost `c` is `c` hits added at once and judged once (HAProxy has no
//! costs; `sc_inc_gpc` would be the nearest). The period is `W` in whole milliseconds,
//! rounded up as HAProxy's time parser rounds a `us` value ([`Haproxy::rounding_note`]).
//! Not modelled: the table's `expire` (taken as at least two periods, after which an
//! entry is equivalent to a new one anyway) and the 32-bit wrap of HAProxy's counters
//! and clock.

use crate::algorithm::Algorithm;
use crate::rule::Rule;
use crate::time::Nanos;

use super::EpochOffset;
use super::governor::wait_from;

const NS_PER_MS: u64 = 1_000_000;

/// HAProxy refuses a time of 2³¹ ms or more (`PARSE_TIME_OVER`).
const MAX_PERIOD_MS: u64 = 0x7FFF_FFFF;

/// A stick table's `http_req_rate(period)` with `deny if { sc_http_req_rate(0) gt N }`.
#[derive(Debug, Clone)]
pub struct Haproxy {
    rule: Rule,
    /// The period in milliseconds (at least 1).
    period: u64,
    /// Where t = 0 lies past an even wall-clock millisecond, in ns (`< 2 ms`).
    phase: u64,
}

/// One key's stick-table entry: its `http_req_rate` frequency counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaproxyState {
    /// False until the key's first hit (no entry in the table yet).
    seen: bool,
    /// `curr_tick`: the millisecond the current period started (always even).
    tick: u64,
    /// `curr_ctr`: hits in the current period, refused ones included.
    curr: u64,
    /// `prev_ctr`: hits in the previous period.
    prev: u64,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

/// A counter as the next hit at some millisecond finds it, after any rotation.
#[derive(Debug, Clone, Copy)]
struct Counter {
    tick: u64,
    curr: u64,
    prev: u64,
}

impl Haproxy {
    /// The stick table and deny rule for `rule`: `http_req_rate(W)` rounded up to whole
    /// milliseconds, `gt N` with `N = max_requests`.
    /// t = 0 is an even millisecond of HAProxy's clock.
    pub fn new(rule: Rule) -> Haproxy {
        Haproxy::at(rule, EpochOffset::ZERO)
    }

    /// [`Haproxy::new`] for a run whose t = 0 is the wall-clock instant `origin`:
    /// HAProxy's milliseconds are the wall clock's, and so is their parity, which
    /// decides where a period starts (ticks are made even).
    pub fn at(rule: Rule, origin: EpochOffset) -> Haproxy {
        let period = rule.window().as_u64().div_ceil(NS_PER_MS).max(1);
        let phase = origin.phase(2 * NS_PER_MS);
        Haproxy {
            rule,
            period,
            phase,
        }
    }

    /// HAProxy's millisecond at instant `now`, counted from the even millisecond at or
    /// before t = 0 (never wraps: at most `u64::MAX / 10⁶ + 2`).
    fn ms_of(&self, now: Nanos) -> u64 {
        (now.as_u64() / NS_PER_MS) + (now.as_u64() % NS_PER_MS + self.phase) / NS_PER_MS
    }

    /// The period HAProxy is given, in milliseconds.
    pub fn period_ms(&self) -> u64 {
        self.period
    }

    /// A sentence for the run's output when `W` is not a period HAProxy can be given as
    /// written, `None` when it is.
    pub fn rounding_note(&self) -> Option<String> {
        let w = self.rule.window();
        if self.period > MAX_PERIOD_MS {
            return Some(format!(
                "haproxy: a window of {w} is longer than HAProxy accepts \
                 (under 2^31 ms, about 24.8 days); modelled as http_req_rate({}ms) anyway",
                self.period
            ));
        }
        (!w.as_u64().is_multiple_of(NS_PER_MS)).then(|| {
            format!(
                "haproxy: a window of {w} is not a whole number of milliseconds; HAProxy \
                 rounds a period up to its millisecond ticks: modelled as http_req_rate({}ms)",
                self.period
            )
        })
    }

    /// `sc_http_req_rate(0)` as HAProxy would read it at `now` without a new hit (after
    /// a hit at `now`, the rate its `deny` rule compared with N).
    /// This is HAProxy's read (`freq_ctr_total` with its low-rate correction), which
    /// never rotates the counter; a decision uses the rotated counter of the hit.
    pub fn rate(&self, s: &HaproxyState, now: Nanos) -> u64 {
        if !s.seen {
            return 0;
        }
        let period = i128::from(self.period);
        let mut remain = i128::from(s.tick) + period - i128::from(self.ms_of(now.max(s.last)));
        let (mut curr, mut prev) = (i128::from(s.curr), i128::from(s.prev));
        if remain < 0 {
            remain += period;
            prev = if remain >= 0 { curr } else { 0 };
            curr = 0;
        }
        if curr == 0 && prev <= 1 {
            return u64::try_from(prev).unwrap_or(0);
        }
        let total = prev * remain.max(0) + curr * period;
        u64::try_from(total / period).unwrap_or(u64::MAX)
    }

    /// The counter the next hit at millisecond `now` works on (rotated if due).
    fn rotated(&self, s: &HaproxyState, now: u64) -> Counter {
        let fresh = Counter {
            tick: now & !1,
            curr: 0,
            prev: 0,
        };
        if !s.seen {
            return fresh;
        }
        if now.saturating_sub(s.tick) < self.period {
            return Counter {
                tick: s.tick,
                curr: s.curr,
                prev: s.prev,
            };
        }
        let tick = s.tick.saturating_add(self.period);
        if now.saturating_sub(tick) >= self.period {
            return fresh;
        }
        Counter {
            tick: tick & !1,
            curr: 0,
            prev: s.curr,
        }
    }

    /// `sc_http_req_rate` as a hit at millisecond `now` would read it before adding
    /// itself: `floor((prev · remain + curr · period) / period)`.
    fn base(&self, s: &HaproxyState, now: u64) -> u128 {
        let c = self.rotated(s, now);
        let period = u128::from(self.period);
        let remain = (u128::from(c.tick) + period).saturating_sub(u128::from(now));
        (u128::from(c.prev) * remain + u128::from(c.curr) * period) / period
    }

    /// The first millisecond from `from` on where `base ≤ limit`. `base` never grows
    /// as time passes and is 0 two periods after the last rotation, so a binary search
    /// finds it.
    fn first_ms_with(&self, s: &HaproxyState, from: u64, limit: u128) -> u64 {
        if self.base(s, from) <= limit {
            return from;
        }
        let (mut lo, mut hi) = (from, s.tick.saturating_add(2 * self.period).max(from));
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if self.base(s, mid) <= limit {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// The wait from `now` until millisecond `ms` begins (zero if it has).
    fn wait_until_ms(&self, s: &HaproxyState, now: Nanos, ms: u64) -> Nanos {
        let at = (u128::from(ms) * u128::from(NS_PER_MS)).saturating_sub(u128::from(self.phase));
        wait_from(at, now, s.last)
    }
}

impl Algorithm for Haproxy {
    type State = HaproxyState;

    fn name(&self) -> &str {
        "haproxy"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.max_requests()
    }

    fn new_state(&self, now: Nanos) -> HaproxyState {
        HaproxyState {
            seen: false,
            tick: 0,
            curr: 0,
            prev: 0,
            last: now,
        }
    }

    fn try_acquire(&self, s: &mut HaproxyState, now: Nanos, cost: u64) -> bool {
        let now = now.max(s.last);
        s.last = now;
        if cost == 0 {
            return true;
        }
        let ms = self.ms_of(now);
        let base = self.base(s, ms);
        let c = self.rotated(s, ms);
        *s = HaproxyState {
            seen: true,
            tick: c.tick,
            curr: c.curr.saturating_add(cost),
            prev: c.prev,
            last: now,
        };
        // Adding `cost` to `curr` adds exactly `cost` to the floored rate.
        base + u128::from(cost) <= u128::from(self.rule.max_requests())
    }

    fn would_pass(&self, s: &HaproxyState, now: Nanos, cost: u64) -> bool {
        cost == 0
            || self.base(s, self.ms_of(now.max(s.last))) + u128::from(cost)
                <= u128::from(self.rule.max_requests())
    }

    fn remaining(&self, s: &HaproxyState, now: Nanos) -> u64 {
        let base = self.base(s, self.ms_of(now.max(s.last)));
        let left = u128::from(self.rule.max_requests()).saturating_sub(base);
        u64::try_from(left).unwrap_or(u64::MAX)
    }

    fn retry_after(&self, s: &HaproxyState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost == 0 {
            return Some(Nanos::ZERO);
        }
        let limit = u128::from(self.rule.max_requests()).checked_sub(u128::from(cost))?;
        let from = self.ms_of(now.max(s.last));
        Some(self.wait_until_ms(s, now, self.first_ms_with(s, from, limit)))
    }

    fn reset_after(&self, s: &HaproxyState, now: Nanos) -> Nanos {
        let from = self.ms_of(now.max(s.last));
        self.wait_until_ms(s, now, self.first_ms_with(s, from, 0))
    }

    /// Only when the next hit would start afresh: two periods after the last rotation
    /// (a rate read as 0 can still hide a period that ends elsewhere than a new one's).
    fn is_idle(&self, s: &HaproxyState, now: Nanos) -> bool {
        !s.seen || self.ms_of(now.max(s.last)).saturating_sub(s.tick) >= 2 * self.period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Nanos {
        Nanos::from_millis(ms)
    }

    /// 3 per 1 s: the previous period weighs by what is left of the current one.
    #[test]
    fn the_previous_period_weighs_by_what_is_left_and_refusals_count() {
        let h = Haproxy::new(Rule::new(3, Nanos::from_secs(1)).unwrap());
        let mut s = h.new_state(Nanos::ZERO);
        // A first hit at 101 ms starts a period at 100 ms (ticks are even).
        for ms in [101, 200, 300] {
            assert!(h.try_acquire(&mut s, at(ms), 1), "{ms} ms");
        }
        assert!(!h.try_acquire(&mut s, at(400), 1), "the 4th in the period");
        assert_eq!(s.curr, 4, "the refused hit is counted");
        // At 1,100 ms the period rotates: prev = 4, remain = 1,000 ms: rate 4 + 1.
        assert!(!h.try_acquire(&mut s, at(1_100), 1));
        // At 1,849 ms: remain 251, prev 4 → floor(4·251/1000) = 1, curr 1 + 1: 3 ≤ 3.
        assert!(h.try_acquire(&mut s, at(1_849), 1));
        assert_eq!(
            h.remaining(&s, at(1_849)),
            0,
            "1 + 3 = 4 > 3 would be refused"
        );
        // At 1,850 ms: remain 250 → 4·250/1000 = 1, curr 2: 1 + 2 = 3, room for 0.
        assert_eq!(h.remaining(&s, at(1_850)), 0);
        // At 1,851 ms: 4·249/1000 = 0: room for 1.
        assert_eq!(h.remaining(&s, at(1_851)), 1);
        assert_eq!(h.retry_after(&s, at(1_849), 1), Some(at(2)));
        // Two periods after 1,100 ms the entry is as good as new.
        assert!(!h.is_idle(&s, at(3_099)));
        assert!(h.is_idle(&s, at(3_100)));
        assert_eq!(h.retry_after(&s, at(1_849), 4), None, "4 > N never passes");
        // HAProxy's read at 1,849 ms: floor((4·251 + 2·1000) / 1000) = 3.
        assert_eq!(h.rate(&s, at(1_849)), 3);
        // Read more than a period after the last rotation: the old curr weighs.
        assert_eq!(h.rate(&s, at(2_600)), 1, "floor(2·500/1000)");
        assert_eq!(h.rate(&s, at(3_200)), 0, "two periods: nothing");
    }

    #[test]
    fn an_odd_period_drifts_a_millisecond_earlier_at_each_rotation() {
        // period 5 ms: a period starting at 0 rotates at 5 to tick 5 & !1 = 4.
        let h = Haproxy::new(Rule::new(100, Nanos::from_millis(5)).unwrap());
        let mut s = h.new_state(Nanos::ZERO);
        assert!(h.try_acquire(&mut s, at(0), 1));
        assert!(h.try_acquire(&mut s, at(5), 1));
        assert_eq!((s.tick, s.curr, s.prev), (4, 1, 1));
        // At 9 ms, 9 − 4 = 5 ≥ 5: rotates again although only 4 ms passed since 5.
        assert!(h.try_acquire(&mut s, at(9), 1));
        assert_eq!((s.tick, s.curr, s.prev), (8, 1, 1));
    }

    #[test]
    fn a_window_off_the_millisecond_is_rounded_up_and_the_run_is_told() {
        let whole = Haproxy::new(Rule::new(5, Nanos::from_secs(10)).unwrap());
        assert_eq!((whole.period_ms(), whole.rounding_note()), (10_000, None));
        let odd = Haproxy::new(Rule::new(5, Nanos::new(1_500_001)).unwrap());
        assert_eq!(odd.period_ms(), 2);
        let note = odd.rounding_note().unwrap();
        assert!(note.contains("http_req_rate(2ms)"), "{note}");
        let tiny = Haproxy::new(Rule::new(5, Nanos::new(10)).unwrap());
        assert_eq!(tiny.period_ms(), 1);
    }
}
