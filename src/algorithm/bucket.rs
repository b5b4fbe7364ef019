//! What the token bucket and the leaky bucket share: their per-key state, their
//! parameters in token·ns units, and the elapsed-time arithmetic with the backwards-clock
//! clamp. Each bucket keeps only its own direction (refill up, or drain down) in its file.

use super::{Packed, Wide};
use crate::rule::Rule;
use crate::time::Nanos;

/// Per-key state of the token and leaky buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketState {
    /// Tokens available (token bucket) or water held (leaky bucket), in units.
    level: Wide,
    /// The latest instant the level was brought up to date.
    pub(super) last: Nanos,
}

impl BucketState {
    pub(super) fn new(level: u128, last: Nanos) -> BucketState {
        BucketState {
            level: Wide::new(level),
            last,
        }
    }

    /// Tokens (token bucket) or water (leaky bucket), in units.
    pub(super) fn level(&self) -> u128 {
        self.level.get()
    }

    pub(super) fn set_level(&mut self, level: u128) {
        self.level = Wide::new(level);
    }

    /// The instant the level was last brought up to date.
    pub fn last(&self) -> Nanos {
        self.last
    }

    /// The state in two words; exact when the level fits in a `u64`.
    pub(super) fn pack(&self) -> Packed {
        debug_assert!(self.level.hi == 0, "packed a level that needs 128 bits");
        [self.level.lo, self.last.as_u64()]
    }

    pub(super) fn unpack([level, last]: Packed) -> BucketState {
        BucketState::new(u128::from(level), Nanos::new(last))
    }
}

/// A bucket's parameters in *token·ns units*: one token is `window` units and the level
/// moves by `max_requests` units per nanosecond, so every refill or drain is an exact
/// integer.
#[derive(Debug, Clone)]
pub(super) struct Bucket {
    pub(super) rule: Rule,
    /// One token, in units (= window in ns).
    pub(super) unit: u128,
    /// Capacity in units (= burst tokens).
    pub(super) cap: u128,
}

impl Bucket {
    pub(super) fn new(rule: Rule) -> Bucket {
        let unit = u128::from(rule.window().as_u64());
        Bucket {
            rule,
            unit,
            cap: unit * u128::from(rule.burst()),
        }
    }

    /// Whether every level fits in a `u64` (a level never exceeds `cap`), so the state
    /// packs into two words.
    pub(super) fn packs(&self) -> bool {
        u64::try_from(self.cap).is_ok()
    }

    /// Units refilled (or drained) between the state's last instant and `now`, and the
    /// latest-instant clamp that makes a backwards clock a no-op.
    pub(super) fn elapsed_units(&self, s: &BucketState, now: Nanos) -> (u128, Nanos) {
        let now = now.max(s.last);
        let elapsed = u128::from((now - s.last).as_u64());
        (elapsed * u128::from(self.rule.max_requests()), now)
    }

    /// The wait from `now` until `units` more have refilled (or drained), counted from
    /// the clamped instant `from`.
    pub(super) fn wait_for(&self, units: u128, from: Nanos, now: Nanos) -> Nanos {
        let wait = super::div_ceil(units, u128::from(self.rule.max_requests()));
        super::wait_until(u128::from(from.as_u64()) + wait, now)
    }
}

/// The most a bucket (or GCRA, its equivalent) admits in any window of `W` ns for `N`
/// per `W` with burst `B`: the whole burst at once, then the refill over the `W − 1` ns
/// to the window's last instant, never more than `B` at any one of the `W` instants:
/// `min(B + N − ⌈N/W⌉, W·B)`, which is `B + N − 1` for windows of at least `N` ns.
pub(super) fn worst_case(rule: &Rule) -> u128 {
    let (n, b) = (u128::from(rule.max_requests()), u128::from(rule.burst()));
    let w = u128::from(rule.window().as_u64()).max(1);
    (b + n - n.div_ceil(w)).min(w * b)
}
