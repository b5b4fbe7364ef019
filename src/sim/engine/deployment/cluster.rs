//! Where a deployment's limiter state lives, and how a node's check-and-consume
//! reaches it: on the node (`local`, `local_split`), atomically at a central store
//! (`shared`), by a read and a later write to that store (`shared_racy`), or on the
//! node with periodic exchanges (`synced`, in [`super::synced`]).
//!
//! Every decision is the library's own `Algorithm` on the library's `DenseLimiter`;
//! this module only chooses which state, at which instant, and when writes land.

use std::collections::VecDeque;

use super::super::attempt::{Answer, Event};
use super::super::server::Server;
use super::super::states::Local;
use super::synced::Synced;
use crate::algorithm::Algorithm;
use crate::limiter::decision;
use crate::rule::Rule;
use crate::sim::{Deployment, Metrics, Scenario, Sharing, StoreClock};
use crate::time::Nanos;

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
                let Ok(answer) = n.ask(event, m);
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
                let Ok(answer) = store.ask(event, m);
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
            let Ok(answer) = self.store.ask(event, m);
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
