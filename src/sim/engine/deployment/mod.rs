//! A run under a `[deployment]`: requests reach one of several nodes through a
//! balancer, and each node's limiter state lives where the store says. Everything runs
//! in true time, and every metric is measured in true time across all nodes: the
//! admissions of one client, wherever they were decided, counted in its trailing
//! window; `false_allow` / `false_deny` against one exact global sliding log fed the
//! true arrival times (the group's reference).
//!
//! The concepts live apart: `router` (the balancer), `cluster` (the stores and their
//! nodes, each a `server::Server` on its own clock), `synced` (the store that
//! exchanges counts). This file is how a deployment decides one attempt for the
//! engine's one driver; it writes no files.

mod cluster;
mod router;
mod synced;

use super::attempt::Event;
use super::driver::{Decide, Decided};
use crate::algorithm::Algorithm;
use crate::rule::Rule;
use crate::sim::{AlgorithmReport, Deployment, KeyTable, Metrics, NodeReport, Scenario, SimError};
use crate::time::Nanos;
use cluster::Cluster;
use router::Router;

/// How one algorithm's attempts are decided on a deployment.
pub(super) struct Deployed<A: Algorithm> {
    deployment: Deployment,
    router: Router,
    cluster: Cluster<A>,
    nodes: Vec<NodeReport>,
}

impl<A: Algorithm> Deployed<A> {
    /// The deployment of the algorithm `make` builds (once per limiter it needs);
    /// `judged`: the nodes that alone decide their requests judge their denials' advice.
    pub(in crate::sim::engine) fn new(
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
        Ok(Decided {
            answer,
            passes,
            heard: event.time + latency,
        })
    }

    fn finish(mut self, end: Nanos, report: &mut AlgorithmReport) -> Result<(), SimError> {
        self.cluster.report(end, &mut report.metrics);
        report.nodes = self.nodes;
        Ok(())
    }
}
