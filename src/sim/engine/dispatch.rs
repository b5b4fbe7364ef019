//! Where the engine turns a registry entry into a run: each built-in runs the engine
//! monomorphised for its concrete type; any other entry (one the caller registered, or
//! a built-in name registered over), and every algorithm under several `[[limit]]`s,
//! runs the entry's type-erased algorithm.
//!
//! A scenario with a `[deployment]` gets the deployment's driver instead, with the
//! same algorithms built once per server.
//!
//! This is the one place the engine builds algorithms (besides the reference's own
//! sliding log, in `stream`); it never runs them.

use super::deployment::Deployed;
use super::driver::{Drive, Driver, Job};
use super::server::{Local, Server, StateBackend};
use crate::algorithm::{
    Algorithm, FixedWindow, Gcra, LeakyBucket, LogState, SlidingWindowCounter, SlidingWindowLog,
    TokenBucket,
};
use crate::composite::Composite;
use crate::registry::{Builtin, Registry};
use crate::rule::Rule;
use crate::sim::{Scenario, SimError};
use crate::time::Nanos;

/// Static dispatch: each built-in runs the engine monomorphised for its concrete type;
/// any other entry falls back to its type-erased algorithm.
pub(super) fn driver<'a>(job: Job<'a>, store: &StateBackend) -> Box<dyn Drive + 'a> {
    #[cfg(not(feature = "redis"))]
    let StateBackend::Memory = store;
    #[cfg(feature = "redis")]
    if let StateBackend::Redis(store) = store {
        let rules = rules(job.scenario);
        let limiter = remote::limiter(store, job.entry, &rules)
            .expect("the run checked every algorithm against the store before it started");
        let capacities = rules
            .iter()
            .map(|r| job.entry.create(*r).capacity())
            .collect();
        let states = super::remote::Remote::new(limiter, capacities);
        let server = Server::new(job.scenario, states, Nanos::ZERO)
            .judged(job.judged())
            .counting_denials(job.entry.counts_denials());
        return Box::new(Driver::new(job, server));
    }
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
            let states = Local::new(make(&rules(sc)), heap_bytes);
            let server = Server::new(sc, states, Nanos::ZERO)
                .judged(job.judged())
                .counting_denials(job.entry.counts_denials());
            Box::new(Driver::new(job, server))
        }
        Some(deployment) => {
            let deployed = Deployed::new(sc, deployment, &make, heap_bytes, job.judged());
            Box::new(Driver::new(job, deployed))
        }
    }
}

/// The scenario's rules: its first, then its further `[[limit]]`s.
fn rules(sc: &Scenario) -> Vec<Rule> {
    std::iter::once(sc.rule)
        .chain(sc.extra_limits.iter().copied())
        .collect()
}

/// Checks that every algorithm of `scenario` can run on `store` (found in `registry`);
/// [`run`](crate::sim::run) checks it too, but a caller can before it creates anything.
#[cfg_attr(not(feature = "redis"), allow(unused_variables))]
pub fn check_store(
    scenario: &Scenario,
    registry: &Registry,
    store: &StateBackend,
) -> Result<(), SimError> {
    match store {
        StateBackend::Memory => Ok(()),
        #[cfg(feature = "redis")]
        StateBackend::Redis(store) => {
            if scenario.deployment.is_some() {
                return Err(SimError::from(crate::sim::StoreUnsupported::Deployment {
                    scenario: scenario.name.clone(),
                }));
            }
            for name in &scenario.algorithms {
                remote::limiter(store, registry.entry(name)?, &rules(scenario))?;
            }
            Ok(())
        }
    }
}

/// The Redis store's limiter for an algorithm: one built-in, or a composite of one
/// built-in over several `[[limit]]`s, as the memory run's.
#[cfg(feature = "redis")]
mod remote {
    use std::time::Duration;

    use crate::redis::{RedisLimiter, RedisStore};
    use crate::registry::Entry;
    use crate::rule::Rule;
    use crate::sim::{SimError, StoreUnsupported};

    /// How long a run waits for each of Redis's answers.
    const TIMEOUT: Duration = Duration::from_secs(30);

    pub(in crate::sim::engine) fn limiter(
        store: &RedisStore,
        entry: &Entry,
        rules: &[Rule],
    ) -> Result<RedisLimiter, SimError> {
        let builtin = entry
            .builtin()
            .ok_or_else(|| StoreUnsupported::NotBuiltin {
                algorithm: entry.name().to_string(),
            })?;
        let unrepresentable = |source| StoreUnsupported::Unrepresentable {
            algorithm: entry.name().to_string(),
            source,
        };
        let mut parts = Vec::new();
        for rule in rules {
            parts.push(store.builtin(builtin, *rule).map_err(unrepresentable)?);
        }
        let limiter = if parts.len() == 1 {
            parts.swap_remove(0)
        } else {
            store
                .composite(parts)
                .expect("a scenario has at least one rule")
        };
        // A run is not a request path: a slow answer (a busy machine) is waited for,
        // since a timeout would end the whole run.
        Ok(limiter.with_timeout(TIMEOUT))
    }
}

/// Heap held by a sliding-log state: one `(instant, cost)` per logged instant.
pub(super) fn log_heap_bytes(state: &LogState) -> usize {
    state.len() * std::mem::size_of::<(Nanos, u64)>()
}
