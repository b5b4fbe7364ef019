//! Where the engine turns an algorithm's name into a run: each built-in name runs the
//! engine monomorphised for its concrete type; any other registered name, and every
//! algorithm under several `[[limit]]`s, falls back to the registry's algorithm.
//!
//! This is the one place the engine builds algorithms by name (besides the reference's
//! own sliding log, `reference`, and its name, `compare::REFERENCE`); it never runs
//! them.

use super::driver::{Drive, Driver, Job};
use crate::algorithm::{
    FixedWindow, Gcra, LeakyBucket, LogState, SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};
use crate::composite::Composite;
use crate::registry::Registry;
use crate::sim::SimError;
use crate::time::Nanos;

/// Static dispatch: each built-in name runs the engine monomorphised for its concrete
/// type; any other registered name falls back to the type-erased algorithm.
pub(super) fn driver<'a>(name: &str, job: Job<'a>) -> Result<Box<dyn Drive + 'a>, SimError> {
    let sc = job.scenario;
    let rule = sc.rule;
    if !sc.extra_limits.is_empty() {
        // Several [[limit]]s: the algorithm enforces all of them as one composite.
        let registry = Registry::default();
        let rules = std::iter::once(rule).chain(sc.extra_limits.iter().copied());
        let parts = rules
            .map(|r| registry.create(name, r))
            .collect::<Result<Vec<_>, _>>()?;
        let all = Composite::new(parts).expect("a scenario has at least one rule");
        return Ok(boxed(job, all, None));
    }
    Ok(match name {
        "token_bucket" => boxed(job, TokenBucket::new(rule), None),
        "leaky_bucket" => boxed(job, LeakyBucket::new(rule), None),
        "fixed_window" => boxed(job, FixedWindow::new(rule), None),
        "sliding_window_log" => boxed(job, SlidingWindowLog::new(rule), Some(log_heap_bytes)),
        "sliding_window_counter" => boxed(job, SlidingWindowCounter::new(rule), None),
        "gcra" => boxed(job, Gcra::new(rule), None),
        other => boxed(job, Registry::default().create(other, rule)?, None),
    })
}

fn boxed<'a, A: crate::algorithm::Algorithm + 'a>(
    job: Job<'a>,
    algorithm: A,
    heap_bytes: Option<fn(&A::State) -> usize>,
) -> Box<dyn Drive + 'a> {
    Box::new(Driver::new(job, algorithm, heap_bytes))
}

/// Heap held by a sliding-log state: one `(instant, cost)` per logged instant.
fn log_heap_bytes(state: &LogState) -> usize {
    state.len() * std::mem::size_of::<(Nanos, u64)>()
}
