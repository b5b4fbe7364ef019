//! Where the engine turns a registry entry into a run: each built-in runs the engine
//! monomorphised for its concrete type; any other entry (one the caller registered, or
//! a built-in name registered over), and every algorithm under several `[[limit]]`s,
//! runs the entry's type-erased algorithm.
//!
//! This is the one place the engine builds algorithms (besides the reference's own
//! sliding log, `reference`); it never runs them.

use super::driver::{Drive, Driver, Job};
use crate::algorithm::{
    FixedWindow, Gcra, LeakyBucket, LogState, SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};
use crate::composite::Composite;
use crate::registry::Builtin;
use crate::time::Nanos;

/// Static dispatch: each built-in runs the engine monomorphised for its concrete type;
/// any other entry falls back to its type-erased algorithm.
pub(super) fn driver<'a>(job: Job<'a>) -> Box<dyn Drive + 'a> {
    let (sc, entry) = (job.scenario, job.entry);
    let rule = sc.rule;
    if !sc.extra_limits.is_empty() {
        // Several [[limit]]s: the algorithm enforces all of them as one composite.
        let rules = std::iter::once(rule).chain(sc.extra_limits.iter().copied());
        let parts = rules.map(|r| entry.create(r)).collect();
        let all = Composite::new(parts).expect("a scenario has at least one rule");
        return boxed(job, all, None);
    }
    match entry.builtin() {
        Some(Builtin::TokenBucket) => boxed(job, TokenBucket::new(rule), None),
        Some(Builtin::LeakyBucket) => boxed(job, LeakyBucket::new(rule), None),
        Some(Builtin::FixedWindow) => boxed(job, FixedWindow::new(rule), None),
        Some(Builtin::SlidingWindowLog) => {
            boxed(job, SlidingWindowLog::new(rule), Some(log_heap_bytes))
        }
        Some(Builtin::SlidingWindowCounter) => boxed(job, SlidingWindowCounter::new(rule), None),
        Some(Builtin::Gcra) => boxed(job, Gcra::new(rule), None),
        None => boxed(job, entry.create(rule), None),
    }
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
