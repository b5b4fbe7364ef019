//! Presets: the limiters people run, each modelled exactly as an [`Algorithm`].
//!
//! A preset is an algorithm like the built-ins: its parameters come from the scenario's
//! rule, its math is integer, and where its peer departs from the textbook (a
//! millisecond clock, a delay instead of a refusal) that departure is the model.
//!
//! [`Algorithm`]: crate::Algorithm

use crate::algorithm::BoxedAlgorithm;
use crate::registry::Entry;

mod nginx;
mod tower;

pub use nginx::{Nginx, NginxParams, NginxRate, NginxState};
pub use tower::{Tower, TowerState};

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

/// Every preset this module models, as registry entries, for the default registry.
pub fn entries() -> Vec<Entry> {
    vec![nginx_entry(NginxParams::default()), tower_entry()]
}
