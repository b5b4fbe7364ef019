//! One limiter of a deployment — a node's own, or the central store's — with its own
//! clock and its own idle-key janitor.
//!
//! It holds state and answers; which instant it is asked at, and when, is the
//! caller's (`cluster`, `synced`) to decide.

use super::super::attempt::{Answer, Event};
use super::super::janitor::Janitor;
use super::super::probe::{Probes, judge};
use super::super::states::{KeyStates, Local};
use crate::algorithm::Algorithm;
use crate::sim::{Metrics, Scenario};
use crate::time::Nanos;

/// A limiter on its own fake clock, with its janitor.
pub(super) struct Limiter<A: Algorithm> {
    /// The limiter and its clock.
    pub(super) own: Local<A>,
    janitor: Janitor,
    /// The most this limiter's clock can be behind true time (its sweeps run that much
    /// earlier, so nothing it would still count is evicted).
    behind: Nanos,
    /// Judges each denial's `retry_after` against this limiter's state, when it alone
    /// decides its requests (`local`, `local_split`, `shared`) and the run reports.
    probes: Option<Probes>,
}

impl<A: Algorithm> Limiter<A> {
    pub(super) fn new(
        sc: &Scenario,
        algorithm: A,
        heap_bytes: Option<fn(&A::State) -> usize>,
        behind: Nanos,
    ) -> Self {
        let own = Local::new(algorithm, heap_bytes);
        Limiter {
            janitor: Janitor::new(sc, &own),
            own,
            behind,
            probes: None,
        }
    }

    /// This limiter judges the advice of its denials (see `probe`).
    pub(super) fn judged(mut self, judged: bool) -> Self {
        self.probes = judged.then(Probes::new);
        self
    }

    /// Runs the idle-key sweeps due by true time `now`, then sets the clock to `at`.
    #[inline]
    pub(super) fn advance(&mut self, now: Nanos, at: Nanos, key: u32) {
        let behind = self.behind;
        let Ok(()) = self
            .janitor
            .catch_up_read(&mut self.own, now, |t| t - behind);
        self.own.now = at;
        self.janitor.touch(key);
    }

    /// Decides `event` at the clock's instant (check and consume, atomically), and
    /// judges a denial's advice into `m` when this limiter has probes.
    #[inline]
    pub(super) fn decide(&mut self, event: &Event, m: &mut Metrics) -> Answer {
        let now = self.own.now;
        let Ok(answer) = self.own.ask(event, now);
        if let Some(probes) = self.probes.as_mut() {
            match answer.retry_after {
                _ if answer.allowed => probes.forget(event.key),
                Some(retry_after) => {
                    let (own, key, cost) = (&mut self.own, event.key, event.cost);
                    let Ok(earliest) = probes
                        .earliest(key, cost, now, || own.earliest(key, cost, now, retry_after));
                    judge(m, now, retry_after, earliest);
                }
                None => {}
            }
        }
        answer
    }

    /// The final sweep at true time `end`, and the memory samples, added into `m`
    /// (keys summed over the deployment's limiters, the largest state kept).
    pub(super) fn report(&mut self, end: Nanos, m: &mut Metrics) {
        let Ok(()) = self.janitor.sweep(&mut self.own, end - self.behind, false);
        let mut own = Metrics::default();
        self.janitor.report(&mut own);
        m.peak_keys += own.peak_keys;
        m.state_bytes_per_key = m.state_bytes_per_key.max(own.state_bytes_per_key);
    }
}
