//! Where the engine turns a registry entry into a run: each built-in runs the engine
//! monomorphised for its concrete type; any other entry (one the caller registered, or
//! a built-in name registered over), and every algorithm under several `[[limit]]`s,
//! runs the entry's type-erased algorithm.
//!
//! A scenario with a `[deployment]` gets the deployment's driver instead, with the
//! same algorithms built once per server.
//!
//! This is the one place the engine builds algorithms (besides the reference's own
//! sliding log, `reference`); it never runs them.

use super::deployment::DeployDriver;
use super::driver::{Drive, Driver, Job};
use crate::algorithm::{
    Algorithm, FixedWindow, Gcra, LeakyBucket, LogState, SlidingWindowCounter, SlidingWindowLog,
    TokenBucket,
};
use crate::composite::Composite;
use crate::registry::Builtin;
use crate::rule::Rule;
use crate::time::Nanos;

/// Static dispatch: each built-in runs the engine monomorphised for its concrete type;
/// any other entry falls back to its type-erased algorithm.
pub(super) fn driver<'a>(job: Job<'a>) -> Box<dyn Drive + 'a> {
    let entry = job.entry;
    if !job.scenario.extra_limits.is_empty() {
        // Several [[limit]]s: the algorithm enforces all of them as one composite.
        let all = move |rules: &[Rule]| {
            let parts = rules.iter().map(|r| entry.create(*r)).collect();
            Composite::new(parts).expect("a scenario has at least one rule")
        };
        return boxed(job, all, None);
    }
    match entry.builtin() {
        Some(Builtin::TokenBucket) => boxed(job, |r| TokenBucket::new(r[0]), None),
        Some(Builtin::LeakyBucket) => boxed(job, |r| LeakyBucket::new(r[0]), None),
        Some(Builtin::FixedWindow) => boxed(job, |r| FixedWindow::new(r[0]), None),
        Some(Builtin::SlidingWindowLog) => {
            boxed(job, |r| SlidingWindowLog::new(r[0]), Some(log_heap_bytes))
        }
        Some(Builtin::SlidingWindowCounter) => {
            boxed(job, |r| SlidingWindowCounter::new(r[0]), None)
        }
        Some(Builtin::Gcra) => boxed(job, |r| Gcra::new(r[0]), None),
        None => boxed(job, move |r| entry.create(r[0]), None),
    }
}

/// The run of the algorithm `make` builds for a list of rules (the scenario's first,
/// then its further `[[limit]]`s): one limiter, or one per server of a deployment
/// (each built for its own rules: a `local_split` node gets its share).
fn boxed<'a, A: Algorithm + 'a>(
    job: Job<'a>,
    make: impl Fn(&[Rule]) -> A + 'a,
    heap_bytes: Option<fn(&A::State) -> usize>,
) -> Box<dyn Drive + 'a> {
    let sc = job.scenario;
    match sc.deployment {
        None => {
            let rules: Vec<Rule> = std::iter::once(sc.rule)
                .chain(sc.extra_limits.iter().copied())
                .collect();
            Box::new(Driver::new(job, make(&rules), heap_bytes))
        }
        Some(deployment) => Box::new(DeployDriver::new(job, deployment, &make, heap_bytes)),
    }
}

/// Heap held by a sliding-log state: one `(instant, cost)` per logged instant.
pub(super) fn log_heap_bytes(state: &LogState) -> usize {
    state.len() * std::mem::size_of::<(Nanos, u64)>()
}
