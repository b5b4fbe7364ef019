//! A run under a `[deployment]`: requests reach one of several nodes through a
//! balancer ([`Router`]), and each node's limiter state lives where the store says
//! ([`Cluster`]): on the node (`local`, `local_split`), atomically at a central store
//! (`shared`), by a read and a later write to that store (`shared_racy`), or on the node
//! with periodic exchanges (`synced`, [`Synced`]). Each limiter is a `server::Server` on
//! its own clock. Everything runs in true time, and every metric is measured in true
//! time across all nodes: the admissions of one client, wherever they were decided,
//! counted in its trailing window; `false_allow` / `false_deny` against one exact global
//! sliding log fed the true arrival times (the group's reference).
//!
//! [`Deployed`] is how a deployment decides one attempt for the engine's one driver.
//! Every decision is the library's own `Algorithm` on the library's `DenseLimiter`; this
//! file only chooses which node, which state, at which instant, and when writes land. It
//! writes no files, and a scenario without a `[deployment]` never reaches it.

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::driver::{Decide, Decided};
use super::record::{Answer, Event, Verdict};
use super::server::{Local, Server};
use crate::algorithm::Algorithm;
use crate::limiter::decision;
use crate::rule::Rule;
use crate::sim::{
    AlgorithmReport, Balancer, Deployment, KeyTable, Metrics, NodeReport, Scenario, Sharing,
    SimError, StoreClock,
};
use crate::time::Nanos;

/// How one algorithm's attempts are decided on a deployment.
pub(super) struct Deployed<A: Algorithm> {
    deployment: Deployment,
    router: Router,
    cluster: Cluster<A>,
    nodes: Vec<NodeReport>,
    /// The whole answer to the latest attempt, for its row.
    last: Option<Answer>,
}

impl<A: Algorithm> Deployed<A> {
    /// The deployment of the algorithm `make` builds (once per limiter it needs);
    /// `judged`: the nodes that alone decide their requests judge their denials' advice.
    pub(super) fn new(
        sc: &Scenario,
        deployment: Deployment,
        make: &dyn Fn(&[Rule]) -> A,
        heap_bytes: Option<fn(&A::State) -> usize>,
        judged: bool,
    ) -> Self {
        Deployed {
            deployment,
            router: Router::new(&deployment, sc.seed),
            cluster: Cluster::new(sc, &deployment, make, heap_bytes, judged),
            nodes: (0..deployment.nodes)
                .map(|node| NodeReport {
                    node,
                    clock_offset_ns: deployment.offset(node) as i64,
                    ..NodeReport::default()
                })
                .collect(),
            last: None,
        }
    }
}

impl<A: Algorithm> Decide for Deployed<A> {
    /// Routes one attempt and has its node decide it (wherever the state lives); it
    /// counts at its true arrival time, and the client hears the answer when it gets
    /// back, latency included.
    #[inline]
    fn decide(
        &mut self,
        event: &Event,
        m: &mut Metrics,
        keys: &KeyTable,
    ) -> Result<Decided, SimError> {
        let node = self.router.pick(event.key, keys);
        let (mut answer, latency) = self.cluster.decide(&self.deployment, node, event, m);
        answer.node = Some(node);
        self.nodes[node as usize].count(answer.allowed);
        // A shaper's admission reaches the service when its delay is over.
        let passes = event.time.saturating_add(answer.delay);
        self.last = Some(answer);
        Ok(Decided {
            verdict: Verdict::of(&answer),
            passes,
            heard: event.time + latency,
        })
    }

    /// Kept whole from [`decide`](Deployed::decide) (the nodes' states may have moved
    /// on since: a synced deployment's exchanges).
    fn answer(&self, _event: &Event, verdict: Verdict) -> Answer {
        self.last.unwrap_or(Answer {
            allowed: verdict.allowed(),
            remaining: 0,
            retry_after: verdict.retry_after(),
            delay: Nanos::ZERO,
            denied_by: None,
            node: None,
        })
    }

    fn finish(mut self, end: Nanos, report: &mut AlgorithmReport) -> Result<(), SimError> {
        self.cluster.report(end, &mut report.metrics);
        report.nodes = self.nodes;
        Ok(())
    }
}

// The load balancer: which node each request attempt goes to.
//
// It only routes; it never decides a request. Every algorithm's run gets its own
// router from the same settings and seed, so with open clients every algorithm sees
// every request at the same node.

/// The random balancer's stream of the seed (traffic sources use 1, 2, …; retry
/// jitter 0): far from both.
const RANDOM_STREAM: u64 = u64::MAX;

/// Picks a node for each attempt.
pub(super) struct Router {
    balancer: Balancer,
    nodes: u32,
    /// Attempts routed so far (round robin).
    routed: u64,
    rng: ChaCha8Rng,
    /// Each key's node under `key_hash`, computed once (`u32::MAX`: not yet).
    sticky: Vec<u32>,
}

impl Router {
    pub(super) fn new(d: &Deployment, seed: u64) -> Router {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(RANDOM_STREAM);
        Router {
            balancer: d.balancer,
            nodes: d.nodes,
            routed: 0,
            rng,
            sticky: Vec::new(),
        }
    }

    /// The node for the next attempt, by `key` (named in `keys`).
    #[inline]
    pub(super) fn pick(&mut self, key: u32, keys: &KeyTable) -> u32 {
        let n = self.nodes;
        match self.balancer {
            Balancer::RoundRobin => {
                let node = (self.routed % u64::from(n)) as u32;
                self.routed += 1;
                node
            }
            Balancer::Random => self.rng.random_range(0..n),
            Balancer::KeyHash => {
                let i = key as usize;
                if i >= self.sticky.len() {
                    self.sticky.resize(i + 1, u32::MAX);
                }
                if self.sticky[i] == u32::MAX {
                    self.sticky[i] = (fnv1a(keys.name(key)) % u64::from(n)) as u32;
                }
                self.sticky[i]
            }
        }
    }
}

/// FNV-1a (64-bit) of a key's name: stable across runs, machines and versions.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One limiter of a deployment — a node's own, or the central store's — on its own
/// clock, with its own idle-key janitor.
type Node<A> = Server<Local<A>>;

/// A node's limiter for `algorithm`, whose clock is at most `behind` true time.
fn node<A: Algorithm>(
    sc: &Scenario,
    algorithm: A,
    heap_bytes: Option<fn(&A::State) -> usize>,
    behind: Nanos,
) -> Node<A> {
    Server::new(sc, Local::new(algorithm, heap_bytes), behind)
}

/// A deployment's limiters, by store.
pub(super) enum Cluster<A: Algorithm> {
    /// `local` and `local_split`: node `i` decides on its own limiter.
    Local(Vec<Node<A>>),
    /// `shared`: one store, one atomic step per request.
    Shared(Node<A>),
    /// `shared_racy`: one store, read then written.
    Racy(Racy<A>),
    /// `synced`: see [`Synced`].
    Synced(Synced<A>),
}

/// A write of `shared_racy` on its way to the store.
pub(super) struct Write<S> {
    at: Nanos,
    key: u32,
    state: S,
}

/// The racy store and the writes not yet landed, in landing order (they all travel
/// the same fixed latency, so arrival order is landing order).
pub(super) struct Racy<A: Algorithm> {
    store: Node<A>,
    writes: VecDeque<Write<A::State>>,
}

impl<A: Algorithm> Cluster<A> {
    /// The limiters `d` needs; `make` builds the algorithm for a list of rules.
    pub(super) fn new(
        sc: &Scenario,
        d: &Deployment,
        make: &dyn Fn(&[Rule]) -> A,
        heap_bytes: Option<fn(&A::State) -> usize>,
        judged: bool,
    ) -> Self {
        let rules: Vec<Rule> = std::iter::once(sc.rule)
            .chain(sc.extra_limits.iter().copied())
            .collect();
        let behind = |node: u32| Nanos::new(u64::try_from(-d.offset(node)).unwrap_or(0));
        let whole = || node(sc, make(&rules), heap_bytes, d.clock_skew);
        match d.store {
            Sharing::Local | Sharing::LocalSplit => Cluster::Local(
                (0..d.nodes)
                    .map(|i| {
                        let own = match d.store {
                            Sharing::LocalSplit => rules
                                .iter()
                                .map(|r| d.split(r, i).expect("validated: every share ≥ 1"))
                                .collect(),
                            _ => rules.clone(),
                        };
                        node(sc, make(&own), heap_bytes, behind(i)).judged(judged)
                    })
                    .collect(),
            ),
            Sharing::Shared { .. } => Cluster::Shared(whole().judged(judged)),
            Sharing::SharedRacy => Cluster::Racy(Racy {
                store: whole(),
                writes: VecDeque::new(),
            }),
            Sharing::Synced { sync_interval } => {
                let nodes = (0..d.nodes).map(|i| node(sc, make(&rules), heap_bytes, behind(i)));
                Cluster::Synced(Synced::new(
                    nodes.collect(),
                    whole(),
                    sync_interval,
                    d.latency,
                ))
            }
        }
    }

    /// Decides `event`, which arrived at true time `event.time` at `node`; returns the
    /// answer and how long after the arrival the node has it.
    #[inline]
    pub(super) fn decide(
        &mut self,
        d: &Deployment,
        node: u32,
        event: &Event,
        m: &mut Metrics,
    ) -> (Answer, Nanos) {
        let t = event.time;
        let stamp = d.node_clock(node, t);
        match self {
            Cluster::Local(nodes) => {
                let n = &mut nodes[node as usize];
                let Ok(()) = n.advance(t, stamp, event.key);
                let Ok(answer) = n.ask_whole(event, m);
                (answer, Nanos::ZERO)
            }
            Cluster::Shared(store) => {
                // Sweeps run by the true time the stamp comes from, so no later
                // request can carry an earlier stamp than a sweep's instant.
                let (now, clock) = match d.store {
                    Sharing::Shared {
                        clock: StoreClock::Node,
                    } => (t, stamp),
                    _ => (t + d.latency, t + d.latency),
                };
                let Ok(()) = store.advance(now, clock, event.key);
                let Ok(answer) = store.ask_whole(event, m);
                (answer, d.latency + d.latency)
            }
            Cluster::Racy(racy) => (racy.decide(d, stamp, event, m), d.latency + d.latency),
            Cluster::Synced(synced) => (synced.decide(node, stamp, event, m), Nanos::ZERO),
        }
    }

    /// The final sweeps and memory samples of every limiter, into `m`.
    pub(super) fn report(&mut self, end: Nanos, m: &mut Metrics) {
        match self {
            Cluster::Local(nodes) => {
                for n in nodes {
                    let Ok(()) = n.report(end, m);
                }
            }
            Cluster::Shared(store) => {
                let Ok(()) = store.report(end, m);
            }
            Cluster::Racy(racy) => {
                let Ok(()) = racy.store.report(end, m);
            }
            Cluster::Synced(synced) => synced.report(end, m),
        }
    }
}

impl<A: Algorithm> Racy<A> {
    /// The read lands at `t + latency`, after every write that lands by then; the node
    /// decides on its copy, with its own clock's `stamp`, and an admission writes the
    /// copy back, landing at `t + 3·latency`. A denial writes nothing.
    #[inline]
    fn decide(&mut self, d: &Deployment, stamp: Nanos, event: &Event, m: &mut Metrics) -> Answer {
        let read = event.time + d.latency;
        self.land(read);
        // Sweeps by the arrival's true time: the stamp is the node's reading of it.
        let Ok(()) = self.store.advance(event.time, stamp, event.key);
        let algorithm = self.store.states.limiter.algorithm();
        if event.cost > algorithm.capacity() {
            // Never fits: no state is read or created.
            let Ok(answer) = self.store.ask_whole(event, m);
            return answer;
        }
        let mut state = self
            .store
            .states
            .limiter
            .state(event.key)
            .cloned()
            .unwrap_or_else(|| algorithm.new_state(stamp));
        let outcome = algorithm.acquire(&mut state, stamp, event.cost);
        let allowed = outcome.admitted();
        let answer = decision(algorithm, &state, stamp, event.cost, allowed);
        let denied_by = (!allowed)
            .then(|| algorithm.binding_rule(&state, stamp, event.cost))
            .flatten()
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX));
        if allowed {
            self.writes.push_back(Write {
                at: read + d.latency + d.latency,
                key: event.key,
                state,
            });
        }
        Answer {
            allowed,
            remaining: answer.remaining,
            retry_after: Some(answer.retry_after),
            delay: outcome.delay(),
            denied_by,
            node: None,
        }
    }

    /// Lands every write due at or before `now`, in order: the last write wins.
    fn land(&mut self, now: Nanos) {
        while self.writes.front().is_some_and(|w| w.at <= now) {
            let w = self.writes.pop_front().expect("just seen");
            self.store.states.limiter.set_state(w.key, w.state);
        }
    }
}

// `store = "synced"`: every node decides on its own limiter, and every
// `sync_interval` the nodes exchange what they admitted.
//
// The exchange of round `k` covers the admissions that arrived before
// `S = k · sync_interval`; it reaches every node at `S + latency`. The agreed state is
// the previous round's with those admissions applied in arrival order (each by the
// library's own `try_acquire`, at the stamp the admitting node gave it, so a state that
// is already full simply stays full). On receipt, each node's state for every key that
// changed becomes the agreed state plus its own admissions since `S`, which the
// exchange did not cover yet. Between exchanges a node sees only its own admissions:
// that is the over-admission this store teaches.

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
        let Ok(answer) = n.ask_whole(event, m);
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

#[cfg(test)]
mod tests {
    use super::fnv1a;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
