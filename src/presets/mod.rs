//! Presets: the limiters people run, each modelled exactly as an [`Algorithm`].
//!
//! A preset is an algorithm like the built-ins: its parameters come from the scenario's
//! rule, its math is integer, and where its peer departs from the textbook (a
//! millisecond clock, a delay instead of a refusal) that departure is the model.
//!
//! [`Algorithm`]: crate::Algorithm

mod nginx;
mod tower;

pub use nginx::{Nginx, NginxParams, NginxRate, NginxState};
pub use tower::{Tower, TowerState};
