//! Building the `[deployment]` table: each field checked at its own position, the
//! fields a store does not use rejected there, defaults filled in.
//!
//! Like the rest of [`super`], this only validates; the engine runs the deployment.

use toml::Spanned;

use super::Builder;
use crate::rule::Rule;
use crate::sim::scenario::ScenarioError;
use crate::sim::scenario::deployment::{Balancer, Deployment, Sharing, StoreClock};
use crate::sim::scenario::raw::RawDeployment;
use crate::time::{NANOS_PER_SEC, Nanos};

/// The stores, in the order messages list them.
const STORES: &str = "\"local\", \"local_split\", \"shared\", \"shared_racy\" or \"synced\"";

impl Builder<'_> {
    /// The deployment `raw` describes, valid for `rule`.
    pub(super) fn deployment(
        &self,
        raw: &Spanned<RawDeployment>,
        rule: &Rule,
    ) -> Result<Deployment, ScenarioError> {
        let d = raw.get_ref();
        let nodes = match &d.nodes {
            None => 1,
            Some(n) if n.get_ref().0 == 0 => {
                return Err(self.err(n.span(), "expected at least 1 node"));
            }
            // Whole<u32::MAX> holds at most u32::MAX.
            Some(n) => u32::try_from(n.get_ref().0).unwrap_or(u32::MAX),
        };
        let deployment = Deployment {
            nodes,
            balancer: self.balancer(d)?,
            store: self.store(d)?,
            latency: d.latency.as_ref().map_or(Nanos::ZERO, |l| l.get_ref().0),
            clock_skew: d.clock_skew.as_ref().map_or(Nanos::ZERO, |s| s.get_ref().0),
        };
        self.deployment_fields(d, &deployment)?;
        if let Some(why) = deployment.split_error(rule) {
            let span = d.nodes.as_ref().map(Spanned::span).unwrap_or(raw.span());
            return Err(self.err(span, why));
        }
        Ok(deployment)
    }

    fn balancer(&self, d: &RawDeployment) -> Result<Balancer, ScenarioError> {
        let Some(b) = &d.balancer else {
            return Ok(Balancer::RoundRobin);
        };
        match b.get_ref().as_str() {
            "round_robin" => Ok(Balancer::RoundRobin),
            "random" => Ok(Balancer::Random),
            "key_hash" => Ok(Balancer::KeyHash),
            other => Err(self.err(
                b.span(),
                format!(
                    "unknown balancer `{other}`; expected \"round_robin\", \"random\" or \
                     \"key_hash\""
                ),
            )),
        }
    }

    fn store(&self, d: &RawDeployment) -> Result<Sharing, ScenarioError> {
        let Some(s) = &d.store else {
            return Ok(Sharing::Local);
        };
        match s.get_ref().as_str() {
            "local" => Ok(Sharing::Local),
            "local_split" => Ok(Sharing::LocalSplit),
            "shared" => Ok(Sharing::Shared {
                clock: self.store_clock(d)?,
            }),
            "shared_racy" => Ok(Sharing::SharedRacy),
            "synced" => Ok(Sharing::Synced {
                sync_interval: self.sync_interval(d)?,
            }),
            other => Err(self.err(
                s.span(),
                format!("unknown store `{other}`; expected {STORES}"),
            )),
        }
    }

    fn store_clock(&self, d: &RawDeployment) -> Result<StoreClock, ScenarioError> {
        let Some(c) = &d.clock else {
            return Ok(StoreClock::Store);
        };
        match c.get_ref().as_str() {
            "store" => Ok(StoreClock::Store),
            "node" => Ok(StoreClock::Node),
            other => Err(self.err(
                c.span(),
                format!("unknown clock `{other}`; expected \"store\" or \"node\""),
            )),
        }
    }

    fn sync_interval(&self, d: &RawDeployment) -> Result<Nanos, ScenarioError> {
        match &d.sync_interval {
            None => Ok(Nanos::new(NANOS_PER_SEC)),
            Some(i) if i.get_ref().0 == Nanos::ZERO => {
                Err(self.err(i.span(), "expected a sync interval above zero"))
            }
            Some(i) => Ok(i.get_ref().0),
        }
    }

    /// Rejects, at its position, each field the chosen store does not use.
    fn deployment_fields(&self, d: &RawDeployment, dep: &Deployment) -> Result<(), ScenarioError> {
        let store = dep.store.name();
        let remote = !matches!(dep.store, Sharing::Local | Sharing::LocalSplit);
        if let Some(l) = d.latency.as_ref().filter(|_| !remote) {
            return Err(self.err(
                l.span(),
                format!(
                    "`latency` applies only to store = \"shared\", \"shared_racy\" or \
                     \"synced\"; a \"{store}\" limiter lives on the node itself"
                ),
            ));
        }
        if let Some(i) = d
            .sync_interval
            .as_ref()
            .filter(|_| !matches!(dep.store, Sharing::Synced { .. }))
        {
            return Err(self.err(
                i.span(),
                "`sync_interval` applies only to store = \"synced\"",
            ));
        }
        if let Some(c) = d
            .clock
            .as_ref()
            .filter(|_| !matches!(dep.store, Sharing::Shared { .. }))
        {
            return Err(self.err(c.span(), "`clock` applies only to store = \"shared\""));
        }
        let store_clock = dep.store
            == Sharing::Shared {
                clock: StoreClock::Store,
            };
        if let Some(s) = d.clock_skew.as_ref().filter(|_| store_clock) {
            return Err(self.err(
                s.span(),
                "`clock_skew` has no effect when store = \"shared\" decides on the store's \
                 clock; add clock = \"node\" to stamp requests with the nodes' clocks",
            ));
        }
        Ok(())
    }
}
