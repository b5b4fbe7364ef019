//! One scenario under another limit with the *same* traffic: what each configuration
//! of a sweep runs, so that one arrival stream serves them all.
//!
//! Only the limit changes here; nothing reads a file or generates an arrival.

use super::burst::burst_period;
use super::{Scenario, TrafficKind};
use crate::rule::Rule;

impl Scenario {
    /// This scenario under `rule` alone, with the *same* traffic: what one
    /// configuration of a sweep runs. Unlike [`Scenario::set_rule`], nothing in the
    /// traffic follows the new rule: a boundary burst without a `period` keeps this
    /// scenario's window as its period, a burst the size of the limit keeps its size,
    /// and a rate written as a multiple of the limit (`"2x"`) keeps its requests per
    /// second. So every configuration sees one identical stream. Further `[[limit]]`s
    /// are dropped, as `set_rule` drops them.
    pub fn with_rule_keeping_traffic(&self, rule: Rule) -> Scenario {
        let mut pinned = self.clone();
        for spec in &mut pinned.traffic {
            match &mut spec.kind {
                TrafficKind::BoundaryBurst { period, .. } => {
                    *period = Some(burst_period(*period, &self.rule));
                }
                TrafficKind::Uniform { rate }
                | TrafficKind::Poisson { rate }
                | TrafficKind::OnOff { rate, .. } => rate.of_limit = None,
                TrafficKind::Trace { .. } => {}
            }
        }
        pinned.rule = rule;
        pinned.extra_limits.clear();
        pinned
    }

    /// Whether some traffic source follows the limit (a boundary burst without a
    /// `period`, or a rate such as `"2x"`), so that `set_rule` would change the stream
    /// and [`Scenario::with_rule_keeping_traffic`] keeps it.
    pub fn traffic_follows_the_limit(&self) -> bool {
        self.traffic.iter().any(|spec| match &spec.kind {
            TrafficKind::BoundaryBurst { period, .. } => period.is_none(),
            TrafficKind::Uniform { rate }
            | TrafficKind::Poisson { rate }
            | TrafficKind::OnOff { rate, .. } => rate.of_limit.is_some(),
            TrafficKind::Trace { .. } => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::time::Nanos;

    #[test]
    fn bursts_and_rates_that_follow_the_limit_keep_the_old_one() {
        let text = r#"
name = "t"
duration = "60s"
[limit]
max_requests = 5
window = "10s"
[[traffic]]
kind = "boundary_burst"
size = 5
[[traffic]]
kind = "poisson"
rate = "2x"
"#;
        let s = Scenario::parse(text, Path::new("t.toml")).unwrap();
        assert!(s.traffic_follows_the_limit());
        let rule = Rule::new(50, Nanos::from_secs(1)).unwrap();
        let kept = s.with_rule_keeping_traffic(rule);
        assert_eq!(kept.rule, rule);
        assert!(!kept.traffic_follows_the_limit());
        let mut moved = s.clone();
        moved.set_rule(rule).unwrap();
        assert_ne!(moved.traffic, kept.traffic);
        // The same arrivals as the scenario under its own limit.
        let (mut a, mut b) = (
            crate::sim::ArrivalStream::new(&s).unwrap(),
            crate::sim::ArrivalStream::new(&kept).unwrap(),
        );
        loop {
            let (x, y) = (a.next_arrival().unwrap(), b.next_arrival().unwrap());
            assert_eq!(x, y);
            if x.is_none() {
                break;
            }
        }
    }
}
