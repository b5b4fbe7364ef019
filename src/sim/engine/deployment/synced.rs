//! `store = "synced"`: every node decides on its own limiter, and every
//! `sync_interval` the nodes exchange what they admitted.
//!
//! The exchange of round `k` covers the admissions that arrived before
//! `S = k · sync_interval`; it reaches every node at `S + latency`. The agreed state is
//! the previous round's with those admissions applied in arrival order (each by the
//! library's own `try_acquire`, at the stamp the admitting node gave it, so a state that
//! is already full simply stays full). On receipt, each node's state for every key that
//! changed becomes the agreed state plus its own admissions since `S`, which the
//! exchange did not cover yet. Between exchanges a node sees only its own admissions:
//! that is the over-admission this store teaches.

use super::super::attempt::{Answer, Event};
use super::super::server::Server;
use super::super::states::Local;
use crate::algorithm::Algorithm;
use crate::sim::Metrics;
use crate::time::Nanos;

/// One admission, as the exchange carries it.
#[derive(Clone, Copy)]
struct Admission {
    /// True arrival time.
    t: Nanos,
    node: u32,
    key: u32,
    cost: u64,
    /// The admitting node's clock reading.
    stamp: Nanos,
}

/// Local limiters and the state they last agreed on.
pub(super) struct Synced<A: Algorithm> {
    nodes: Vec<Server<Local<A>>>,
    agreed: Server<Local<A>>,
    interval: Nanos,
    latency: Nanos,
    /// The next exchange's round (`S = round · interval`).
    round: u64,
    /// Admissions since the last exchange's cut, in arrival order.
    log: Vec<Admission>,
    /// Keys in `log`, each once (`seen[key]` marks them).
    keys: Vec<u32>,
    seen: Vec<bool>,
}

impl<A: Algorithm> Synced<A> {
    pub(super) fn new(
        nodes: Vec<Server<Local<A>>>,
        agreed: Server<Local<A>>,
        interval: Nanos,
        latency: Nanos,
    ) -> Self {
        Synced {
            nodes,
            agreed,
            interval,
            latency,
            round: 1,
            log: Vec::new(),
            keys: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Delivers the exchanges due by `event.time`, then decides at `node`.
    #[inline]
    pub(super) fn decide(
        &mut self,
        node: u32,
        stamp: Nanos,
        event: &Event,
        m: &mut Metrics,
    ) -> Answer {
        self.deliver_due(event.time);
        let n = &mut self.nodes[node as usize];
        let Ok(()) = n.advance(event.time, stamp, event.key);
        let Ok(answer) = n.ask(event, m);
        if answer.allowed {
            self.note(Admission {
                t: event.time,
                node,
                key: event.key,
                cost: event.cost,
                stamp,
            });
        }
        answer
    }

    fn note(&mut self, a: Admission) {
        let i = a.key as usize;
        if i >= self.seen.len() {
            self.seen.resize(i + 1, false);
        }
        if !self.seen[i] {
            self.seen[i] = true;
            self.keys.push(a.key);
        }
        self.log.push(a);
    }

    /// Every exchange whose delivery (`S + latency`) is at or before `now`.
    fn deliver_due(&mut self, now: Nanos) {
        loop {
            let cut = Nanos::new(self.round.saturating_mul(self.interval.as_u64()));
            if cut + self.latency > now {
                return;
            }
            if self.log.is_empty() {
                // Nothing to exchange: skip to the last round delivered by now.
                let by_now = (now - self.latency).as_u64() / self.interval.as_u64();
                self.round = self.round.max(by_now) + 1;
                continue;
            }
            self.exchange(cut);
            self.round += 1;
        }
    }

    /// The exchange cut at `cut`.
    fn exchange(&mut self, cut: Nanos) {
        let covered = self.log.partition_point(|a| a.t < cut);
        for a in &self.log[..covered] {
            // Sweeps by the admission's true time: every later replay carries a stamp
            // at least that time minus the skew, so no sweep forgets what it counts.
            let Ok(()) = self.agreed.advance(a.t, a.stamp, a.key);
            let agreed = &mut self.agreed;
            let _ = agreed
                .states
                .limiter
                .try_acquire_n(a.key, a.cost, agreed.at);
        }
        self.log.drain(..covered);
        for &key in &self.keys {
            let agreed = self.agreed.states.limiter.state(key).cloned();
            for node in &mut self.nodes {
                match &agreed {
                    Some(state) => node.states.limiter.set_state(key, state.clone()),
                    None => node.states.limiter.reset(key),
                }
            }
        }
        // Each node's own admissions the exchange did not cover, on top, in order.
        for a in &self.log {
            let node = &mut self.nodes[a.node as usize];
            let _ = node.states.limiter.try_acquire_n(a.key, a.cost, a.stamp);
        }
        for &key in &self.keys {
            self.seen[key as usize] = false;
        }
        self.keys.clear();
        for a in &self.log {
            let i = a.key as usize;
            if !self.seen[i] {
                self.seen[i] = true;
                self.keys.push(a.key);
            }
        }
    }

    /// The final sweeps and memory samples of every limiter, into `m`.
    pub(super) fn report(&mut self, end: Nanos, m: &mut Metrics) {
        for n in &mut self.nodes {
            let Ok(()) = n.report(end, m);
        }
        let Ok(()) = self.agreed.report(end, m);
    }
}
