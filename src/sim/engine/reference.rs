//! The exact reference for open clients: the sliding log (or a composite of logs, one
//! per `[[limit]]`) on the same stream, whose decisions every other algorithm's are
//! compared with to count `false_allow` / `false_deny`.
//!
//! A group of algorithms gets the reference's decisions once per chunk, from the first
//! source that has them: the log it runs as an algorithm, the group that runs the log
//! (over a channel), or its own copy of the log. The stream and the log are
//! deterministic, so the source changes no result. The reference never decides for an
//! algorithm; it is only compared with.

use std::sync::mpsc::{Receiver, SyncSender};

use super::driver::Drive;
use super::server::Sweeps;
use crate::algorithm::SlidingWindowLog;
use crate::composite::Composite;
use crate::dense::DenseLimiter;
use crate::sim::traffic::Arrival;
use crate::sim::{KeyTable, Scenario};
use crate::time::Nanos;

/// How a group gets the reference's decisions (open clients only).
pub(super) enum Share {
    /// Computes them itself, if it needs them: from its own sliding-log driver, or
    /// from a separate copy of the log.
    Alone,
    /// Owns the sliding-log driver and sends each chunk's decisions to these groups.
    Send(Vec<SyncSender<Vec<bool>>>),
    /// Receives each chunk's decisions from the group that owns the sliding log.
    Receive(Receiver<Vec<bool>>),
}

/// Where one group's reference decisions come from, chunk by chunk.
pub(super) struct ReferenceFeed {
    /// The driver that is the reference itself: its decisions on the chunk are the
    /// log's, so it runs first and no separate copy is needed.
    pub(super) log_driver: Option<usize>,
    /// Groups that receive the log driver's decisions.
    senders: Vec<SyncSender<Vec<bool>>>,
    /// The group's decisions come from the group that runs the log.
    receiver: Option<Receiver<Vec<bool>>>,
    /// The group's own copy of the log, when it needs one and has no other source.
    reference: Option<Reference>,
    /// The reference's decisions on the current chunk.
    allowed: Vec<bool>,
}

impl ReferenceFeed {
    pub(super) fn new(
        scenario: &Scenario,
        drivers: &[Box<dyn Drive + '_>],
        share: Share,
        chunk: usize,
    ) -> ReferenceFeed {
        let log_driver = drivers.iter().position(|d| d.is_reference());
        let (senders, receiver) = match share {
            Share::Send(senders) if log_driver.is_some() => (senders, None),
            Share::Receive(receiver) => (Vec::new(), Some(receiver)),
            _ => (Vec::new(), None),
        };
        let reference = (log_driver.is_none()
            && receiver.is_none()
            && drivers.iter().any(|d| d.wants_reference()))
        .then(|| Reference::new(scenario));
        ReferenceFeed {
            log_driver,
            senders,
            receiver,
            reference,
            allowed: Vec::with_capacity(chunk),
        }
    }

    /// The reference's decision on each arrival of `chunk`, or `None` when the group
    /// has no reference. Runs the log driver (if the group has one) on the chunk.
    pub(super) fn decide(
        &mut self,
        chunk: &[(u64, Arrival)],
        drivers: &mut [Box<dyn Drive + '_>],
        keys: &KeyTable,
    ) -> Option<&[bool]> {
        self.allowed.clear();
        if let Some(r) = self.reference.as_mut() {
            r.decide(chunk, &mut self.allowed);
        }
        if let Some(i) = self.log_driver {
            drivers[i].feed(chunk, None, keys, Some(&mut self.allowed));
            // A receiver that has stopped (its run failed) is simply dropped.
            self.senders
                .retain(|tx| tx.send(self.allowed.clone()).is_ok());
        }
        if let Some(rx) = self.receiver.as_ref() {
            match rx.recv() {
                Ok(decided) => self.allowed = decided,
                // The log's run failed, which fails the whole run: stop counting.
                Err(_) => self.receiver = None,
            }
        }
        (self.reference.is_some() || self.log_driver.is_some() || self.receiver.is_some())
            .then_some(self.allowed.as_slice())
    }
}

/// The group's own copy of the reference. Its decisions depend only on the stream, so
/// one copy serves every algorithm of a group.
struct Reference {
    limiter: ReferenceLimiter,
    sweeps: Sweeps,
}

/// The log for one rule, or a composite of logs (exact for every rule) when the
/// scenario has several `[[limit]]`s; an enum so the common case stays unboxed.
enum ReferenceLimiter {
    One(DenseLimiter<SlidingWindowLog>),
    All(DenseLimiter<Composite<SlidingWindowLog>>),
}

impl ReferenceLimiter {
    fn allows(&mut self, key: u32, cost: u64, now: Nanos) -> bool {
        match self {
            ReferenceLimiter::One(l) => l.try_acquire_n(key, cost, now),
            ReferenceLimiter::All(l) => l.try_acquire_n(key, cost, now),
        }
        .is_ok_and(|d| d.allowed)
    }

    fn evict_idle(&mut self, now: Nanos) {
        match self {
            ReferenceLimiter::One(l) => l.evict_idle(now),
            ReferenceLimiter::All(l) => l.evict_idle(now),
        };
    }
}

impl Reference {
    fn new(sc: &Scenario) -> Reference {
        let limiter = if sc.extra_limits.is_empty() {
            ReferenceLimiter::One(DenseLimiter::new(SlidingWindowLog::new(sc.rule)))
        } else {
            let logs = std::iter::once(sc.rule)
                .chain(sc.extra_limits.iter().copied())
                .map(SlidingWindowLog::new);
            let all = Composite::new(logs.collect()).expect("a scenario has at least one rule");
            ReferenceLimiter::All(DenseLimiter::new(all))
        };
        Reference {
            limiter,
            sweeps: Sweeps::new(sc),
        }
    }

    /// Whether the log admits each arrival of `chunk`, into `out`.
    fn decide(&mut self, chunk: &[(u64, Arrival)], out: &mut Vec<bool>) {
        for (_, a) in chunk {
            while let Some(at) = self.sweeps.next_due(a.time) {
                // Idle keys are forgotten, as the algorithms' own limiters do, to keep
                // memory bounded; that never changes a decision.
                self.limiter.evict_idle(at);
            }
            out.push(self.limiter.allows(a.key, a.cost, a.time));
        }
    }
}
