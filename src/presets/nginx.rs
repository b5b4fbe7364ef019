//! The `nginx` preset: `limit_req` as nginx keeps it, rounding included.
//!
//! Modelled on nginx's `src/http/modules/ngx_http_limit_req_module.c` (1.15.7 and later,
//! which covers Debian 12's 1.22), read, not copied:
//! - **A millisecond clock.** nginx reads its cached `ngx_current_msec`; an instant `t`
//!   here is millisecond `floor(t / 1 ms)` of the simulation's clock.
//! - **Excess in thousandths of a request.** Per key it keeps `last` (ms) and `excess`.
//!   A request at millisecond `now` computes
//!   `excess' = max(0, excess − rate·(now − last)/1000 + 1000)` (integer division, `rate`
//!   in thousandths of a request per second) and is refused (503) when
//!   `excess' > burst·1000`; refusing changes nothing. Otherwise `excess = excess'`, and
//!   `last = now` only when `now > last`: a clock that steps back lets no time pass and
//!   leaves `last` (nginx clamps a step back of under 60 s to 0 ms and then leaves
//!   `last`; `ngx_http_limit_req_lookup`). A key's first
//!   request starts at `excess = 0` (a new node), so it is free.
//! - **Rate as nginx parses it.** `rate=Xr/s` is `1000·X`, `rate=Xr/m` is
//!   `floor(1000·X / 60)`: `1r/m` is 16 thousandths per second, a request every 62.5 s,
//!   not 60 s (`ngx_http_limit_req_zone`).
//! - **Delays.** An admitted request with `excess' > delay·1000` waits
//!   `(excess' − delay·1000)·1000 / rate` ms (integer division) on nginx's timer, which
//!   fires when the millisecond clock reaches `now + delay`: it reaches the service then
//!   (`ngx_http_limit_req_account`). `nodelay` never delays; the default `delay=0`
//!   delays every request with any excess.
//!
//! Not modelled: nginx forgets idle keys from its shared zone (LRU, after 60 s) whatever
//! they hold; here a key is forgotten only when it is equivalent to a new one. Several
//! `limit_req` lines on one location are a [`Composite`](crate::Composite) matter.

use crate::algorithm::{Algorithm, Outcome};
use crate::rule::Rule;
use crate::time::Nanos;

const NS_PER_MS: u64 = 1_000_000;

/// `limit_req`'s own parameters (the `[preset.nginx]` table of a scenario).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NginxParams {
    /// `burst=N`: requests beyond the rate that are queued or let through (default 0).
    pub burst: u64,
    /// `nodelay`: requests within the burst pass at once (default false).
    pub nodelay: bool,
    /// `delay=N`: the first N excess requests pass at once, the rest are delayed
    /// (default 0). Ignored with `nodelay`.
    pub delay: u64,
}

/// The rate a `limit_req_zone` line can say for a rule, as nginx stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NginxRate {
    /// Thousandths of a request per second, as nginx stores it (`ctx->rate`).
    pub milli_per_sec: u64,
    /// The `rate=` text that gives it, e.g. `"5r/s"` or `"30r/m"`.
    pub text: String,
    /// False when the rule's `N per W` is not a whole number of requests per second or
    /// per minute, so the nearest `r/m` was taken.
    pub exact: bool,
}

impl NginxRate {
    /// The `rate=` for "`rule.max_requests()` per `rule.window()`": `r/s` when that is a
    /// whole number, else `r/m` when that is, else the nearest whole `r/m` (at least
    /// 1), marked inexact.
    pub fn for_rule(rule: &Rule) -> NginxRate {
        let n = u128::from(rule.max_requests());
        let w = u128::from(rule.window().as_u64());
        let per_sec = n * 1_000_000_000;
        let per_min = per_sec * 60;
        // nginx's ngx_atoi takes a signed machine integer; huge rates saturate.
        let cap = u128::from(u64::MAX / 1000);
        if per_sec % w == 0 {
            let x = (per_sec / w).min(cap) as u64;
            return NginxRate::new(x, 1, "r/s", true);
        }
        let exact = per_min % w == 0;
        let x = ((per_min + w / 2) / w).clamp(1, cap) as u64;
        NginxRate::new(x, 60, "r/m", exact)
    }

    fn new(x: u64, scale: u64, unit: &str, exact: bool) -> NginxRate {
        NginxRate {
            milli_per_sec: x * 1000 / scale,
            text: format!("{x}{unit}"),
            exact,
        }
    }
}

/// nginx's `limit_req` (see the module docs).
#[derive(Debug, Clone)]
pub struct Nginx {
    rule: Rule,
    rate: NginxRate,
    params: NginxParams,
}

/// One key's node in nginx's zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NginxState {
    /// False until the key's first admitted request (nginx has no node for it yet).
    seen: bool,
    /// nginx's `last`: the millisecond of the last admission that moved the clock.
    last_ms: u64,
    /// nginx's `excess`, in thousandths of a request.
    excess: u64,
}

impl Nginx {
    /// `limit_req` with `rate` from `rule` ([`NginxRate::for_rule`]) and `params`.
    /// `rule.burst()` is not read: nginx's burst is `params.burst`.
    pub fn new(rule: Rule, params: NginxParams) -> Nginx {
        Nginx {
            rule,
            rate: NginxRate::for_rule(&rule),
            params,
        }
    }

    /// The rate as nginx stores it, and whether it is exactly the rule's.
    pub fn rate(&self) -> &NginxRate {
        &self.rate
    }

    /// A sentence for the run's output when the rule cannot be written in nginx's
    /// units, `None` when it can.
    pub fn rounding_note(&self) -> Option<String> {
        (!self.rate.exact).then(|| {
            format!(
                "nginx: {} per {} is not a whole number of r/s or r/m; modelled as rate={} \
                 (the nearest nginx accepts)",
                self.rule.max_requests(),
                self.rule.window(),
                self.rate.text
            )
        })
    }

    fn rate_milli(&self) -> u128 {
        u128::from(self.rate.milli_per_sec.max(1))
    }

    fn burst_milli(&self) -> u128 {
        u128::from(self.params.burst) * 1000
    }

    /// The excess a request of cost 1 would reach at millisecond `now_ms`.
    fn excess_at(&self, s: &NginxState, now_ms: u64) -> u128 {
        if !s.seen {
            return 0;
        }
        let ms = u128::from(now_ms.saturating_sub(s.last_ms));
        (u128::from(s.excess) + 1000).saturating_sub(self.rate_milli() * ms / 1000)
    }

    /// The delay in ms for an admission that left `excess`.
    fn delay_ms(&self, excess: u128) -> u128 {
        if self.params.nodelay {
            return 0;
        }
        let free = u128::from(self.params.delay) * 1000;
        excess.saturating_sub(free) * 1000 / self.rate_milli()
    }

    /// The least wait from `now` until the excess a request of `cost` would reach is at
    /// most `burst·1000 − 1000·(cost − 1)`; `None` when `cost` exceeds the capacity.
    fn wait_for(&self, s: &NginxState, now: Nanos, cost: u64) -> Option<Nanos> {
        let target = (u128::from(self.params.burst) + 1).checked_sub(u128::from(cost))? * 1000;
        if !s.seen {
            return Some(Nanos::ZERO);
        }
        let Some(over) = (u128::from(s.excess) + 1000).checked_sub(target) else {
            return Some(Nanos::ZERO);
        };
        // rate·ms/1000 ≥ over  ⇔  ms ≥ ceil(1000·over / rate).
        let ms = (1000 * over).div_ceil(self.rate_milli());
        let at = (u128::from(s.last_ms) + ms) * u128::from(NS_PER_MS);
        Some(Nanos::saturating_from_u128(
            at.saturating_sub(u128::from(now.as_u64())),
        ))
    }
}

impl Algorithm for Nginx {
    type State = NginxState;

    fn name(&self) -> &str {
        "nginx"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    /// A new key's first request is free, then `burst` more: `burst + 1`.
    fn capacity(&self) -> u64 {
        self.params.burst.saturating_add(1)
    }

    fn new_state(&self, now: Nanos) -> NginxState {
        NginxState {
            seen: false,
            last_ms: now.as_u64() / NS_PER_MS,
            excess: 0,
        }
    }

    fn try_acquire(&self, state: &mut NginxState, now: Nanos, cost: u64) -> bool {
        self.acquire(state, now, cost).admitted()
    }

    fn acquire(&self, s: &mut NginxState, now: Nanos, cost: u64) -> Outcome {
        if cost == 0 {
            return Outcome::Allowed;
        }
        let now_ms = now.as_u64() / NS_PER_MS;
        // A cost of c is c requests in the same millisecond: the first as above, each
        // further one adds 1000 (no time passes between them).
        let excess = self.excess_at(s, now_ms) + (u128::from(cost) - 1) * 1000;
        if excess > self.burst_milli() {
            return Outcome::Denied;
        }
        if !s.seen || now_ms > s.last_ms {
            s.last_ms = now_ms;
        }
        s.seen = true;
        // excess ≤ burst·1000 ≤ u64::MAX·1000 does not always fit; saturate (a burst of
        // 1.8e16 requests is not a configuration nginx can hold either).
        s.excess = u64::try_from(excess).unwrap_or(u64::MAX);
        let wake_ms = u128::from(now_ms) + self.delay_ms(excess);
        let wake = Nanos::saturating_from_u128(wake_ms * u128::from(NS_PER_MS));
        Outcome::after(wake.saturating_sub(now))
    }

    fn remaining(&self, s: &NginxState, now: Nanos) -> u64 {
        let excess = self.excess_at(s, now.as_u64() / NS_PER_MS);
        match self.burst_milli().checked_sub(excess) {
            Some(room) => u64::try_from(room / 1000 + 1).unwrap_or(u64::MAX),
            None => 0,
        }
    }

    fn retry_after(&self, s: &NginxState, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost == 0 {
            return Some(Nanos::ZERO);
        }
        self.wait_for(s, now, cost)
    }

    fn reset_after(&self, s: &NginxState, now: Nanos) -> Nanos {
        // Back to a full capacity when a request would find no excess at all.
        self.wait_for(s, now, self.capacity())
            .unwrap_or(Nanos::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nginx(n: u64, window: Nanos, params: NginxParams) -> Nginx {
        Nginx::new(Rule::new(n, window).unwrap(), params)
    }

    fn ms(v: u64) -> Nanos {
        Nanos::from_millis(v)
    }

    #[test]
    fn rates_are_written_in_nginx_units_and_rounded_as_its_parser_stores_them() {
        let rate = |n, w| NginxRate::for_rule(&Rule::new(n, w).unwrap());
        assert_eq!(rate(5, Nanos::from_secs(1)).text, "5r/s");
        assert_eq!(rate(5, Nanos::from_secs(1)).milli_per_sec, 5000);
        assert_eq!(rate(1, ms(500)).text, "2r/s");
        let per_min = rate(1, Nanos::from_secs(60));
        assert_eq!((per_min.text.as_str(), per_min.milli_per_sec), ("1r/m", 16));
        assert!(per_min.exact);
        let odd = rate(7, Nanos::from_secs(13));
        // 7 per 13 s = 32.3 r/m → 32r/m, 533 thousandths per second.
        assert_eq!((odd.text.as_str(), odd.milli_per_sec), ("32r/m", 533));
        assert!(!odd.exact);
        let slow = rate(1, Nanos::from_secs(3600));
        assert_eq!(
            (slow.text.as_str(), slow.exact),
            ("1r/m", false),
            "at least 1r/m"
        );
    }

    #[test]
    fn without_burst_a_second_request_inside_the_interval_is_refused() {
        let a = nginx(1, Nanos::from_secs(1), NginxParams::default());
        let mut s = a.new_state(Nanos::ZERO);
        assert_eq!(
            a.acquire(&mut s, ms(0), 1),
            Outcome::Allowed,
            "first is free"
        );
        assert_eq!(a.acquire(&mut s, ms(999), 1), Outcome::Denied);
        assert_eq!(a.retry_after(&s, ms(999), 1), Some(ms(1)));
        assert_eq!(a.acquire(&mut s, ms(1000), 1), Outcome::Allowed);
    }

    #[test]
    fn the_millisecond_clock_truncates_both_instants() {
        let a = nginx(1, Nanos::from_secs(1), NginxParams::default());
        let mut s = a.new_state(Nanos::ZERO);
        assert!(a.try_acquire(&mut s, Nanos::new(999_999), 1), "ms 0");
        // 1000.0 ms − 0.999999 ms of true time, but ms 1000 − ms 0 on nginx's clock.
        let at = Nanos::new(1_000_000_000);
        assert_eq!(a.acquire(&mut s, at, 1), Outcome::Allowed);
    }

    #[test]
    fn within_the_burst_requests_are_delayed_by_excess_over_rate() {
        let p = NginxParams {
            burst: 3,
            ..NginxParams::default()
        };
        let a = nginx(2, Nanos::from_secs(1), p); // 2r/s: 500 ms a request
        let mut s = a.new_state(Nanos::ZERO);
        let at = Nanos::new(100_250_000); // ms 100, off the ms grid
        assert_eq!(a.acquire(&mut s, at, 1), Outcome::Allowed);
        // excess 1000 → 500 ms; the timer fires at ms 600.
        let d = ms(600).saturating_sub(at);
        assert_eq!(a.acquire(&mut s, at, 1), Outcome::Delayed(d));
        assert_eq!(
            a.acquire(&mut s, at, 1),
            Outcome::Delayed(d.saturating_add(ms(500)))
        );
        assert_eq!(
            a.acquire(&mut s, at, 1),
            Outcome::Delayed(d.saturating_add(ms(1000)))
        );
        assert_eq!(
            a.acquire(&mut s, at, 1),
            Outcome::Denied,
            "excess 4000 > 3000"
        );
        assert_eq!(a.remaining(&s, at), 0);
    }

    #[test]
    fn nodelay_passes_the_burst_at_once_and_delay_n_passes_the_first_n() {
        let nodelay = NginxParams {
            burst: 2,
            nodelay: true,
            delay: 0,
        };
        let a = nginx(1, Nanos::from_secs(1), nodelay);
        let mut s = a.new_state(Nanos::ZERO);
        let got: Vec<Outcome> = (0..4).map(|_| a.acquire(&mut s, ms(5), 1)).collect();
        use Outcome::*;
        assert_eq!(got, [Allowed, Allowed, Allowed, Denied]);

        let two_free = NginxParams {
            burst: 4,
            nodelay: false,
            delay: 2,
        };
        let a = nginx(1, Nanos::from_secs(1), two_free);
        let mut s = a.new_state(Nanos::ZERO);
        let got: Vec<Outcome> = (0..6).map(|_| a.acquire(&mut s, ms(0), 1)).collect();
        assert_eq!(
            got,
            [
                Allowed,
                Allowed,
                Allowed,
                Delayed(ms(1000)),
                Delayed(ms(2000)),
                Denied
            ]
        );
    }

    #[test]
    fn the_leak_is_truncated_to_whole_thousandths_at_every_admission() {
        // 3r/s = 3000 thousandths a second: 1 ms leaks 3, 333 ms leaks 999, not 1000.
        let a = nginx(
            3,
            Nanos::from_secs(1),
            NginxParams {
                burst: 1,
                nodelay: true,
                delay: 0,
            },
        );
        let mut s = a.new_state(Nanos::ZERO);
        assert!(a.try_acquire(&mut s, ms(0), 1)); // excess 0
        assert!(a.try_acquire(&mut s, ms(0), 1)); // excess 1000
        // At ms 333: 1000 − 999 + 1000 = 1001 > 1000: refused; at ms 334 it passes.
        assert!(!a.try_acquire(&mut s, ms(333), 1));
        assert_eq!(a.retry_after(&s, ms(333), 1), Some(ms(1)));
        assert!(a.try_acquire(&mut s, ms(334), 1));
    }

    #[test]
    fn retry_after_is_the_least_wait_and_a_cost_above_capacity_never_passes() {
        let a = nginx(
            5,
            Nanos::from_secs(1),
            NginxParams {
                burst: 2,
                nodelay: true,
                delay: 0,
            },
        );
        let mut s = a.new_state(Nanos::ZERO);
        for _ in 0..3 {
            assert!(a.try_acquire(&mut s, Nanos::new(7), 1));
        }
        let now = Nanos::new(1_500_000);
        let wait = a.retry_after(&s, now, 1).unwrap();
        assert!(wait > Nanos::ZERO);
        assert!(!a.would_pass(
            &s,
            now.saturating_add(wait).saturating_sub(Nanos::new(1)),
            1
        ));
        assert!(a.would_pass(&s, now.saturating_add(wait), 1));
        assert_eq!(a.retry_after(&s, now, 4), None, "capacity is burst + 1 = 3");
        let reset = a.reset_after(&s, now);
        assert_eq!(a.remaining(&s, now.saturating_add(reset)), 3);
        assert!(a.is_idle(&s, now.saturating_add(reset)));
    }
}
