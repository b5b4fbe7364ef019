//! The `[deployment]` table, validated: how many servers stand behind the balancer,
//! how it picks one, where their limiter's state lives, and the delays and clock
//! offsets between them.
//!
//! Plain settings and the arithmetic that follows from them (node clock offsets, a
//! `local_split` node's share of the limit); the engine's `deployment` module runs them.
//! A scenario without the table has no `Deployment` at all and runs as one server.

use crate::rule::Rule;
use crate::time::Nanos;

/// Servers behind a load balancer sharing (or not) one limit. See docs/scenarios.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployment {
    /// Servers behind the balancer (≥ 1; default 1).
    pub nodes: u32,
    /// How a request's server is picked (default round robin).
    pub balancer: Balancer,
    /// Where the limiter's state lives (default `local`).
    pub store: Sharing,
    /// One-way delay between a node and the store, or between nodes when they sync
    /// (`shared`, `shared_racy`, `synced`; default 0). Fixed, not drawn.
    pub latency: Nanos,
    /// Node `i`'s clock reads true time plus an offset spread evenly over
    /// `[−clock_skew, +clock_skew]` (default 0).
    pub clock_skew: Nanos,
}

/// How the balancer picks a node for each request attempt (a retry is picked anew).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balancer {
    /// Attempt `j` of the whole stream goes to node `j mod nodes`. The default.
    RoundRobin,
    /// A uniformly random node, from the scenario's seed.
    Random,
    /// Sticky by client: the node is a hash of the key's name (FNV-1a) `mod nodes`.
    KeyHash,
}

/// How a deployment's nodes share the limiter's state (`[deployment] store`): where
/// it lives and how a check-and-consume reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Each node its own limiter with the full limit. The default.
    Local,
    /// Each node its own limiter with a share of the limit (see [`Deployment::split`]).
    LocalSplit,
    /// One central store; an atomic check-and-consume at `t + latency`, answered at
    /// `t + 2·latency`.
    Shared {
        /// Whose clock stamps the decision.
        clock: StoreClock,
    },
    /// One central store read at `t + latency` and written at `t + 3·latency`: not
    /// atomic, so requests whose read and write interleave decide on stale state.
    SharedRacy,
    /// Local limiters that exchange their admissions every `sync_interval`.
    Synced {
        /// Time between two exchanges (default 1 s).
        sync_interval: Nanos,
    },
}

/// Whose clock a `shared` store decides with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreClock {
    /// The store's own clock (true time at the store, `t + latency`), as a Redis
    /// script reading `TIME` does. The default.
    Store,
    /// The node's clock when the request arrived (`t + offset`), sent with the request.
    Node,
}

impl Balancer {
    /// The name as written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            Balancer::RoundRobin => "round_robin",
            Balancer::Random => "random",
            Balancer::KeyHash => "key_hash",
        }
    }
}

impl Sharing {
    /// The name as written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            Sharing::Local => "local",
            Sharing::LocalSplit => "local_split",
            Sharing::Shared { .. } => "shared",
            Sharing::SharedRacy => "shared_racy",
            Sharing::Synced { .. } => "synced",
        }
    }
}

impl Deployment {
    /// Node `i`'s clock offset from true time, in signed nanoseconds: `−skew` for the
    /// first node, `+skew` for the last, evenly between (floored), 0 for a lone node.
    pub fn offset(&self, node: u32) -> i128 {
        let skew = i128::from(self.clock_skew.as_u64());
        if self.nodes < 2 {
            return 0;
        }
        -skew + 2 * skew * i128::from(node) / i128::from(self.nodes - 1)
    }

    /// What node `i`'s clock reads at true time `t`; it never reads below zero.
    pub fn node_clock(&self, node: u32, t: Nanos) -> Nanos {
        let at = i128::from(t.as_u64()) + self.offset(node);
        Nanos::new(u64::try_from(at.max(0)).unwrap_or(u64::MAX))
    }

    /// Node `i`'s share of `rule` under `local_split`: `max_requests` and `burst` are
    /// each divided by the node count, the remainder going one apiece to the first
    /// nodes, so the shares add up to exactly the limit. `None` when a share would be
    /// zero (fewer permits than nodes).
    pub fn split(&self, rule: &Rule, node: u32) -> Option<Rule> {
        let share = |total: u64| {
            let n = u64::from(self.nodes);
            total / n + u64::from(u64::from(node) < total % n)
        };
        let split = Rule::new(share(rule.max_requests()), rule.window()).ok()?;
        split.with_burst(share(rule.burst())).ok()
    }

    /// Why `rule` cannot be split over the nodes, if it cannot.
    pub fn split_error(&self, rule: &Rule) -> Option<String> {
        let n = u64::from(self.nodes);
        let small = rule.max_requests().min(rule.burst());
        (self.store == Sharing::LocalSplit && small < n).then(|| {
            format!(
                "store = \"local_split\" gives each of the {n} nodes a share of the limit, \
                 but max_requests = {} and burst = {} cannot give every node at least 1; \
                 use at most {small} nodes or a larger limit",
                rule.max_requests(),
                rule.burst()
            )
        })
    }
}

impl super::Scenario {
    /// Runs the scenario on `nodes` servers (e.g. `compare --nodes`): its
    /// `[deployment]` with another node count, or, without one, `nodes` local
    /// limiters behind round robin. Refused when `local_split` cannot give every node
    /// a share of the limit.
    pub fn set_nodes(&mut self, nodes: u32) -> Result<(), super::ScenarioError> {
        let mut d = self.deployment.unwrap_or(Deployment {
            nodes: 1,
            balancer: Balancer::RoundRobin,
            store: Sharing::Local,
            latency: Nanos::ZERO,
            clock_skew: Nanos::ZERO,
        });
        d.nodes = nodes.max(1);
        let rules = std::iter::once(&self.rule).chain(&self.extra_limits);
        if let Some(why) = rules.filter_map(|r| d.split_error(r)).next() {
            return Err(super::ScenarioError::file(&self.path, why));
        }
        self.deployment = Some(d);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(nodes: u32, skew_ms: u64, store: Sharing) -> Deployment {
        Deployment {
            nodes,
            balancer: Balancer::RoundRobin,
            store,
            latency: Nanos::ZERO,
            clock_skew: Nanos::from_millis(skew_ms),
        }
    }

    #[test]
    fn offsets_spread_evenly_from_minus_to_plus_the_skew() {
        let d = deployment(4, 30, Sharing::Local);
        let offsets: Vec<i128> = (0..4).map(|i| d.offset(i)).collect();
        assert_eq!(offsets, [-30_000_000, -10_000_000, 10_000_000, 30_000_000]);
        assert_eq!(deployment(1, 30, Sharing::Local).offset(0), 0);
        // A clock behind true time never reads below zero.
        assert_eq!(d.node_clock(0, Nanos::from_millis(10)), Nanos::ZERO);
        assert_eq!(d.node_clock(3, Nanos::ZERO), Nanos::from_millis(30));
    }

    #[test]
    fn two_nodes_sit_at_minus_and_plus_the_skew() {
        let d = deployment(2, 30, Sharing::Local);
        assert_eq!((d.offset(0), d.offset(1)), (-30_000_000, 30_000_000));
        assert_eq!(
            d.node_clock(1, Nanos::from_millis(5)),
            Nanos::from_millis(35)
        );
        assert_eq!(
            d.node_clock(0, Nanos::from_millis(50)),
            Nanos::from_millis(20)
        );
    }

    #[test]
    fn local_split_needs_one_permit_per_node_and_no_more() {
        let d = deployment(4, 0, Sharing::LocalSplit);
        // max_requests and burst of exactly 4: one each.
        let four = Rule::new(4, Nanos::from_secs(1)).unwrap();
        assert_eq!(d.split_error(&four), None);
        assert!(
            (0..4)
                .all(|i| d.split(&four, i).map(|r| (r.max_requests(), r.burst())) == Some((1, 1)))
        );
        // A burst below the node count is refused, even with max_requests enough.
        let low_burst = Rule::new(8, Nanos::from_secs(1))
            .unwrap()
            .with_burst(3)
            .unwrap();
        assert!(d.split_error(&low_burst).unwrap().contains("burst = 3"));
        // Other stores never split.
        let small = Rule::new(1, Nanos::from_secs(1)).unwrap();
        assert_eq!(deployment(4, 0, Sharing::Local).split_error(&small), None);
    }

    #[test]
    fn local_split_shares_add_up_to_exactly_the_limit() {
        let d = deployment(4, 0, Sharing::LocalSplit);
        let rule = Rule::new(10, Nanos::from_secs(1))
            .unwrap()
            .with_burst(7)
            .unwrap();
        let shares: Vec<(u64, u64)> = (0..4)
            .map(|i| d.split(&rule, i).unwrap())
            .map(|r| (r.max_requests(), r.burst()))
            .collect();
        assert_eq!(shares, [(3, 2), (3, 2), (2, 2), (2, 1)]);
        assert!(d.split_error(&rule).is_none());
        let small = Rule::new(3, Nanos::from_secs(1)).unwrap();
        assert!(d.split_error(&small).unwrap().contains("at most 3 nodes"));
    }
}
