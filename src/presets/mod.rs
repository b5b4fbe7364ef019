//! Presets: the rate limiters people run, modelled decision for decision.
//!
//! A preset is an ordinary [`Algorithm`](crate::Algorithm) (exact integer math over a
//! per-key state) whose behaviour is that of a real limiter, rounding included, rather
//! than a textbook algorithm's: where its peer departs from the textbook (a millisecond
//! clock, a period floored to whole nanoseconds, a delay instead of a refusal) that
//! departure is the model. Each takes its parameters from the scenario's `[limit]`
//! (`max_requests` N, `window` W, `burst` B) as docs/presets.md says; `nginx` also reads
//! a scenario's `[preset.nginx]`. Presets live in [`Registry::standard`], after the six
//! built-ins; the group name `presets` selects every preset, as `all` selects the six.
//!
//! Each preset is checked against the real peer in a differential test
//! (`tests/preset_*.rs`, `tests/presets_*.rs`).
//!
//! A few peers read the wall clock, so their windows (or ticks) line up with the Unix
//! epoch ([`ALIGNED`]): their constructors take an [`EpochOffset`], where the run's
//! t = 0 lies on that clock, and [`aligned_entries`] builds them for one. The registry's
//! entries put t = 0 at the epoch.
//!
//! [`Registry::standard`]: crate::Registry::standard

use std::sync::OnceLock;

use crate::algorithm::BoxedAlgorithm;
use crate::registry::{Entry, Registry};
use crate::rule::Rule;
use crate::time::Nanos;

mod envoy;
mod envoy_local;
mod epoch;
mod governor;
mod haproxy;
mod limits;
mod nginx;
mod tower;

pub use envoy::{EnvoyRateLimit, EnvoyState, unit_of};
pub use envoy_local::{EnvoyLocal, EnvoyLocalState};
pub use epoch::EpochOffset;
pub use governor::{Governor, GovernorState};
pub use haproxy::{Haproxy, HaproxyState};
pub use limits::{
    LimitsCounterState, LimitsFixedWindow, LimitsLogState, LimitsMovingWindow,
    LimitsSlidingWindowCounter, LimitsWindowState,
};
pub use nginx::{Nginx, NginxParams, NginxRate, NginxState};
pub use tower::{Tower, TowerState};

/// The group name that selects every preset (like `all` for the built-ins).
pub use crate::registry::PRESETS_GROUP as GROUP;

impl Registry {
    /// Everything ratesim ships: the six built-ins, then the presets (models of the
    /// limiters people run, [`crate::presets`]), shared. Scenarios, the simulator and
    /// the CLI name algorithms in this one; `all` still means the six and `presets`
    /// the presets. (Defined here, above the registry, which knows no preset.)
    pub fn standard() -> &'static Registry {
        static STANDARD: OnceLock<Registry> = OnceLock::new();
        STANDARD.get_or_init(|| {
            let mut registry = Registry::builtin().clone();
            for preset in entries() {
                registry.add(preset);
            }
            registry
        })
    }
}

/// The registry entry of `nginx` with `limit_req` parameters `params` (a scenario's
/// `[preset.nginx]`; [`NginxParams::default`] without one).
pub fn nginx_entry(params: NginxParams) -> Entry {
    Entry::new(
        "nginx",
        "nginx limit_req: leaky bucket on a ms clock, excess in 1/1000 request; delays within burst unless nodelay.",
        move |r| BoxedAlgorithm::new(Nginx::new(r, params)),
    )
    .as_preset()
}

/// The registry entry of `tower`.
pub fn tower_entry() -> Entry {
    Entry::new(
        "tower",
        "tower RateLimit: window opens at the first call after the last ended; waits (delay), never refuses.",
        |r| BoxedAlgorithm::new(Tower::new(r)),
    )
    .as_preset()
}

/// The presets whose peer reads the wall clock, so that where a run's t = 0 lies on it
/// changes decisions: `envoy` (windows of whole units of Unix time),
/// `limits_sliding_window_counter` (`time.time()`'s windows) and `haproxy` (HAProxy
/// 2.6's millisecond ticks and their parity). The others start from their first
/// request or their own process's start (`envoy_local`'s fill timer, tower's and
/// nginx's monotonic clocks, governor's and `limits`' other strategies).
pub const ALIGNED: [&str; 3] = ["envoy", "limits_sliding_window_counter", "haproxy"];

/// The entries of the [`ALIGNED`] presets for a run whose t = 0 is the wall-clock
/// instant `origin`, to put over the standard ones ([`Registry::add`]).
pub fn aligned_entries(origin: EpochOffset) -> Vec<Entry> {
    vec![
        limits_counter_entry(origin),
        haproxy_entry(origin),
        envoy_entry(origin),
    ]
}

fn limits_counter_entry(origin: EpochOffset) -> Entry {
    Entry::new(
        "limits_sliding_window_counter",
        "Python limits 5.x counter: floor(estimate) + cost <= N; double-counts before the first window ends.",
        move |r| BoxedAlgorithm::new(LimitsSlidingWindowCounter::at(r, origin)),
    )
    .as_preset()
}

fn haproxy_entry(origin: EpochOffset) -> Entry {
    Entry::new(
        "haproxy",
        "HAProxy http_req_rate: this period plus the last weighted by what is left (ms ticks); refusals count.",
        move |r| BoxedAlgorithm::new(Haproxy::at(r, origin)),
    )
    .counting_denials()
    .as_preset()
}

fn envoy_entry(origin: EpochOffset) -> Entry {
    Entry::new(
        "envoy",
        "envoyproxy/ratelimit: a window of W aligned to the epoch; refused requests are counted too.",
        move |r| BoxedAlgorithm::new(EnvoyRateLimit::at(r, origin)),
    )
    .counting_denials()
    .as_preset()
}

/// Why preset `name` cannot stand for `rule`: its peer's configuration cannot say it
/// and the peer would refuse the nearest one. `None` when it can (perhaps rounded, which
/// the run's notes say).
pub fn refusal(name: &str, rule: &Rule) -> Option<String> {
    match name {
        "envoy" => envoy::refusal(rule.window()),
        "envoy_local" => (rule.window() < Nanos::from_millis(envoy_local::MIN_FILL_INTERVAL_MS))
            .then(|| EnvoyLocal::new(*rule).interval_note())
            .flatten(),
        _ => None,
    }
}

/// Every preset, as registry entries in display order (`nginx` with its default
/// `limit_req` parameters).
fn entries() -> Vec<Entry> {
    vec![
        nginx_entry(NginxParams::default()),
        tower_entry(),
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
        .counting_denials()
        .as_preset(),
        Entry::new(
            "limits_moving_window",
            "Python limits 5.x moving window: a log over the closed interval [t - W, t], one ns stricter.",
            |r| BoxedAlgorithm::new(LimitsMovingWindow::new(r)),
        )
        .as_preset(),
        limits_counter_entry(EpochOffset::ZERO),
        haproxy_entry(EpochOffset::ZERO),
        envoy_entry(EpochOffset::ZERO),
        Entry::new(
            "envoy_local",
            "Envoy local_ratelimit (timer): N tokens added every W on a fixed timer, up to B; no refill between.",
            |r| BoxedAlgorithm::new(EnvoyLocal::new(r)),
        )
        .with_burst()
        .as_preset(),
    ]
}
