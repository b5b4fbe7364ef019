//! `envoy_local`: Envoy's local rate-limit filter (`envoy.filters.http.local_ratelimit`)
//! with its timer-driven token bucket, as Envoy up to 1.30 decides (and 1.31+ with the
//! runtime guard `envoy.reloadable_features.no_timer_based_rate_limit_token_bucket` set
//! to false).
//!
//! Modelled on `source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc`
//! (`LocalRateLimiterImpl`, `onFillTimer`, `requestAllowedHelper`), read, not copied:
//! - **The bucket starts full**: `tokens = max_tokens` when the filter is built (the
//!   simulation's origin plays that instant).
//! - **Tokens arrive in whole steps on a timer**, not continuously: the fill timer is
//!   armed for `fill_interval` when the filter is built and re-armed each time it fires,
//!   and each firing adds `tokens_per_fill`, capped at `max_tokens`. So fills happen at
//!   `k · fill_interval` after the origin, for every key alike; a key first seen at `t`
//!   finds a full bucket. A request exactly at a fill instant sees the fill.
//! - **A request takes one token if there is one**, else it is refused (and takes
//!   nothing). A cost `c` takes `c` tokens or none.
//!
//! `tokens_per_fill = N`, `fill_interval = W`, `max_tokens = B`. Envoy reads the
//! interval in whole milliseconds (a `Duration` truncated to ms) and refuses one under
//! 50 ms; [`EnvoyLocal::interval_note`] says when `W` is not what Envoy would run.
//!
//! Not modelled: the timer's drift (Envoy re-arms it after each firing, so fills slip
//! later by the event loop's delay, typically well under a millisecond), the share of
//! `local_cluster_rate_limit`, and descriptors (each descriptor's bucket is another
//! `envoy_local` with its own parameters). Envoy 1.31 made a continuous bucket the
//! default (`AtomicTokenBucketImpl`, refilled in `double` tokens on access): that one is
//! ratesim's `token_bucket` up to floating-point rounding.

use crate::algorithm::Algorithm;
use crate::rule::Rule;
use crate::time::Nanos;

use super::governor::wait_from;

const NS_PER_MS: u64 = 1_000_000;

/// Envoy refuses a `fill_interval` under 50 ms.
pub(crate) const MIN_FILL_INTERVAL_MS: u64 = 50;

/// Envoy's timer-driven local rate limit: `N` tokens every `W`, at most `B`.
#[derive(Debug, Clone)]
pub struct EnvoyLocal {
    rule: Rule,
    /// The fill interval in ns: `W` truncated to whole milliseconds (`W` itself when
    /// under 1 ms, which Envoy would refuse anyway).
    interval: u64,
}

/// Per-key state of [`EnvoyLocal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvoyLocalState {
    /// Tokens in the bucket after the fill numbered `fills`.
    tokens: u64,
    /// How many timer firings `tokens` includes: `⌊t / interval⌋` at the last request.
    fills: u64,
    /// The latest instant seen: a backwards clock is treated as this.
    last: Nanos,
}

impl EnvoyLocal {
    /// The filter for `rule`: `tokens_per_fill = N`, `fill_interval = W` (whole ms),
    /// `max_tokens = B`.
    pub fn new(rule: Rule) -> EnvoyLocal {
        let w = rule.window().as_u64();
        let interval = if w >= NS_PER_MS { w - w % NS_PER_MS } else { w };
        EnvoyLocal { rule, interval }
    }

    /// The fill interval the model runs, in ns.
    pub fn interval(&self) -> Nanos {
        Nanos::new(self.interval)
    }

    /// A sentence for the run's output when `W` is not a `fill_interval` Envoy runs as
    /// written: under 50 ms (Envoy refuses the config) or not whole milliseconds.
    pub fn interval_note(&self) -> Option<String> {
        let w = self.rule.window();
        if w.as_u64() < MIN_FILL_INTERVAL_MS * NS_PER_MS {
            return Some(format!(
                "envoy_local: a fill_interval of {w} is under the 50ms Envoy accepts \
                 (\"local rate limit token bucket fill timer must be >= 50ms\")"
            ));
        }
        (!w.as_u64().is_multiple_of(NS_PER_MS)).then(|| {
            format!(
                "envoy_local: a fill_interval of {w} is not a whole number of milliseconds; \
                 Envoy truncates it: modelled as {}",
                self.interval()
            )
        })
    }

    fn fills_at(&self, now: Nanos) -> u64 {
        now.as_u64() / self.interval
    }

    /// Tokens in the bucket at `now`, every due fill applied.
    fn level(&self, s: &EnvoyLocalState, now: Nanos) -> u64 {
        let due = self.fills_at(now.max(s.last)).saturating_sub(s.fills);
        let added = u128::from(due) * u128::from(self.rule.max_requests());
        let level = (u128::from(s.tokens) + added).min(u128::from(self.rule.burst()));
        u64::try_from(level).unwrap_or(u64::MAX)
    }

    /// The wait from `now` until the bucket holds `want` tokens (`want ≤ B`).
    fn wait_for(&self, s: &EnvoyLocalState, now: Nanos, want: u64) -> Nanos {
        let level = self.level(s, now);
        if level >= want {
            return Nanos::ZERO;
        }
        let fills = (want - level).div_ceil(self.rule.max_requests());
        let at = (u128::from(self.fills_at(now.max(s.last))) + u128::from(fills))
            * u128::from(self.interval);
        wait_from(at, now, s.last)
    }
}

impl Algorithm for EnvoyLocal {
    type State = EnvoyLocalState;

    fn name(&self) -> &str {
        "envoy_local"
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.rule.burst()
    }

    fn new_state(&self, now: Nanos) -> EnvoyLocalState {
        EnvoyLocalState {
            tokens: self.rule.burst(),
            fills: self.fills_at(now),
            last: now,
        }
    }

    fn try_acquire(&self, s: &mut EnvoyLocalState, now: Nanos, cost: u64) -> bool {
        let now = now.max(s.last);
        let level = self.level(s, now);
        if level < cost {
            return false;
        }
        *s = EnvoyLocalState {
            tokens: level - cost,
            fills: self.fills_at(now),
            last: now,
        };
        true
    }

    fn remaining(&self, s: &EnvoyLocalState, now: Nanos) -> u64 {
        self.level(s, now)
    }

    fn retry_after(&self, s: &EnvoyLocalState, now: Nanos, cost: u64) -> Option<Nanos> {
        (cost <= self.rule.burst()).then(|| self.wait_for(s, now, cost))
    }

    fn reset_after(&self, s: &EnvoyLocalState, now: Nanos) -> Nanos {
        self.wait_for(s, now, self.rule.burst())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Nanos {
        Nanos::from_millis(ms)
    }

    /// 2 tokens every 100 ms, at most 3: fills at 100, 200, … ms for every key.
    #[test]
    fn tokens_arrive_in_whole_steps_on_the_origins_timer() {
        let rule = Rule::new(2, Nanos::from_millis(100))
            .unwrap()
            .with_burst(3)
            .unwrap();
        let e = EnvoyLocal::new(rule);
        let mut s = e.new_state(at(150));
        for _ in 0..3 {
            assert!(e.try_acquire(&mut s, at(150), 1), "a new key finds it full");
        }
        assert!(
            !e.try_acquire(&mut s, at(199), 1),
            "no refill between fills"
        );
        assert_eq!(e.retry_after(&s, at(199), 1), Some(at(1)));
        assert_eq!(e.retry_after(&s, at(199), 3), Some(at(101)), "two fills");
        assert!(
            e.try_acquire(&mut s, at(200), 2),
            "the fill at 200 ms: 2 tokens"
        );
        assert!(!e.try_acquire(&mut s, at(299), 1));
        assert_eq!(e.remaining(&s, at(1_000)), 3, "capped at max_tokens");
        assert_eq!(
            e.reset_after(&s, at(250)),
            at(150),
            "2 + 2 ≥ 3 after two fills"
        );
        assert_eq!(e.retry_after(&s, at(250), 4), None, "more than max_tokens");
    }

    #[test]
    fn an_interval_envoy_would_not_run_as_written_is_said() {
        let rule = |w| Rule::new(5, w).unwrap();
        assert_eq!(
            EnvoyLocal::new(rule(Nanos::from_secs(1))).interval_note(),
            None
        );
        let short = EnvoyLocal::new(rule(Nanos::from_millis(20)));
        assert!(short.interval_note().unwrap().contains(">= 50ms"));
        let odd = EnvoyLocal::new(rule(Nanos::new(100_500_000)));
        assert_eq!(odd.interval(), Nanos::from_millis(100));
        assert!(odd.interval_note().unwrap().contains("modelled as 100ms"));
    }
}
