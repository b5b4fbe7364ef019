//! Presets: the rate limiters people run, modelled decision for decision.
//!
//! A preset is an ordinary [`Algorithm`](crate::Algorithm) (exact integer math over a
//! per-key state) whose behaviour is that of a real limiter, rounding included, rather
//! than a textbook algorithm's. Each takes its parameters from the scenario's
//! `[limit]` (`max_requests` N, `window` W, `burst` B) as the preset contract in
//! `docs/presets.md` says, and is registered after the six built-ins. The group name
//! `presets` selects every preset, as `all` selects the six built-ins.
//!
//! Each preset is checked against the real peer in a differential test
//! (`tests/presets_*.rs`).

mod envoy;
mod governor;
mod limits;

pub use envoy::{EnvoyRateLimit, EnvoyState};
pub use governor::{Governor, GovernorState};
pub use limits::{
    LimitsCounterState, LimitsFixedWindow, LimitsLogState, LimitsMovingWindow,
    LimitsSlidingWindowCounter, LimitsWindowState,
};

use crate::algorithm::BoxedAlgorithm;
use crate::registry::Entry;

/// The group name that selects every preset (like `all` for the built-ins).
pub const GROUP: &str = "presets";

/// The registry entries of every preset, in display order.
pub(crate) fn entries() -> Vec<Entry> {
    vec![
        Entry::new(
            "governor",
            "governor 0.10's GCRA: period floor(W/N) ns, so waits run short and a window can hold one more.",
            |r| BoxedAlgorithm::new(Governor::new(r)),
        )
        .with_burst()
        .as_preset(),
        Entry::new(
            "limits_fixed_window",
            "Python limits 5.x fixed window: starts at the key's first hit, and denied hits are counted too.",
            |r| BoxedAlgorithm::new(LimitsFixedWindow::new(r)),
        )
        .as_preset(),
        Entry::new(
            "limits_moving_window",
            "Python limits 5.x moving window: a log over the closed interval [t - W, t], one ns stricter.",
            |r| BoxedAlgorithm::new(LimitsMovingWindow::new(r)),
        )
        .as_preset(),
        Entry::new(
            "limits_sliding_window_counter",
            "Python limits 5.x counter: floor(estimate) + cost <= N; double-counts before the first window ends.",
            |r| BoxedAlgorithm::new(LimitsSlidingWindowCounter::new(r)),
        )
        .as_preset(),
        Entry::new(
            "envoy",
            "envoyproxy/ratelimit: a window of W aligned to the epoch; refused requests are counted too.",
            |r| BoxedAlgorithm::new(EnvoyRateLimit::new(r)),
        )
        .as_preset(),
    ]
}
