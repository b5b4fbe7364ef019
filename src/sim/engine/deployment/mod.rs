//! A run under a `[deployment]`: requests reach one of several nodes through a
//! balancer, and each node's limiter state lives where the store says. Everything runs
//! in true time, and every metric is measured in true time across all nodes: the
//! admissions of one client, wherever they were decided, counted in its trailing
//! window; `false_allow` / `false_deny` against one exact global sliding log fed the
//! true arrival times (the group's reference).
//!
//! The concepts live apart: `router` (the balancer), `cluster` (the stores),
//! `synced` (the store that exchanges counts), `node` (one limiter on its own clock).
//! This file is the per-attempt story; like the single-server driver it decides
//! nothing itself and writes no files.

mod cluster;
mod node;
mod router;
mod synced;

use super::attempt::Event;
use super::driver::Job;
use super::progress::ProgressTicker;
use super::record::Outcome;
use super::steps::{RunState, Steps};
use crate::algorithm::Algorithm;
use crate::rule::Rule;
use crate::sim::{Deployment, KeyTable, NodeReport, Scenario, SimError};
use cluster::Cluster;
use router::Router;

/// One algorithm's run on a deployment.
pub(super) struct DeployDriver<'a, A: Algorithm> {
    sc: &'a Scenario,
    deployment: Deployment,
    router: Router,
    cluster: Cluster<A>,
    /// The retry client, comparison, recording, rows and first error.
    run: RunState,
    progress: ProgressTicker<'a>,
    nodes: Vec<NodeReport>,
}

impl<'a, A: Algorithm> DeployDriver<'a, A> {
    /// A run of the algorithm `make` builds (once per limiter the deployment needs).
    pub(in crate::sim::engine) fn new(
        mut job: Job<'a>,
        deployment: Deployment,
        make: &dyn Fn(&[Rule]) -> A,
        heap_bytes: Option<fn(&A::State) -> usize>,
    ) -> Self {
        let sc = job.scenario;
        let silent = job.sink.is_none();
        DeployDriver {
            sc,
            deployment,
            router: Router::new(&deployment, sc.seed),
            cluster: Cluster::new(sc, &deployment, make, heap_bytes, !silent),
            // Deployed, even the sliding log is not the reference: the reference is the
            // one global log, and this run is compared with it.
            run: RunState::new(&mut job, false),
            progress: ProgressTicker::new(job.progress, sc.duration),
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

impl<A: Algorithm> Steps for DeployDriver<'_, A> {
    /// Routes one attempt, has its node decide it (wherever the state lives), and
    /// records it at its true arrival time; a retrying client hears the answer when it
    /// gets back, latency included.
    fn step(
        &mut self,
        event: Event,
        log_allowed: Option<bool>,
        keys: &KeyTable,
    ) -> Result<bool, SimError> {
        let node = self.router.pick(event.key, keys);
        let m = &mut self.run.record.m;
        let (mut answer, delay) = self.cluster.decide(&self.deployment, node, &event, m);
        answer.node = Some(node);
        // A shaper's admission reaches the service when its delay is over.
        let passes = event.time.saturating_add(answer.delay);
        self.run.record.attempt(&event, answer.allowed, passes);
        self.nodes[node as usize].count(answer.allowed);
        let heard = Event {
            time: event.time + delay,
            ..event
        };
        if answer.allowed {
            if let Some(retry) = self.run.retry.as_mut() {
                retry.admitted(&heard);
            }
        } else {
            if answer.retry_after.is_none() {
                self.run.record.m.never_fits += 1;
            }
            if let Some(retry) = self.run.retry.as_mut() {
                retry.denied(&heard, answer.retry_after);
            }
        }
        self.run.answered(&event, &answer, log_allowed, keys)?;
        self.progress.tick(event.time);
        Ok(answer.allowed)
    }

    fn state(&mut self) -> &mut RunState {
        &mut self.run
    }

    fn state_ref(&self) -> &RunState {
        &self.run
    }

    fn outcome(self, keys: &KeyTable) -> Result<Outcome, SimError> {
        Ok(DeployDriver::outcome(self, keys))
    }
}

impl<A: Algorithm> DeployDriver<'_, A> {
    /// The run is over: the final sweeps, and the metrics.
    fn outcome(mut self, keys: &KeyTable) -> Outcome {
        let sc = self.sc;
        self.progress.finish();
        let mut outcome = self.run.finish(sc, keys);
        self.cluster
            .report(sc.duration, &mut outcome.report.metrics);
        outcome.report.nodes = self.nodes;
        outcome
    }
}
