//! The sliding window log on Redis, computed by `lua/log.lua`: the entries stay in a
//! Redis list beside the key's state, so no call ships the log; any window fits, since
//! expiries are sums of (s, ns) pairs.

use super::script::{Family, Part};
use super::window::quota_fits;
use super::{Scripted, Unrepresentable};
use crate::algorithm::{Algorithm, SlidingWindowLog};
use crate::time::NANOS_PER_SEC;

impl Scripted for SlidingWindowLog {
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable> {
        let name = "sliding_window_log";
        quota_fits(self, name)?;
        let rule = self.rule();
        let w = rule.window().as_u64();
        let params = vec![
            rule.max_requests().to_string(),
            (w / NANOS_PER_SEC).to_string(),
            (w % NANOS_PER_SEC).to_string(),
        ];
        Ok(vec![Part::new(self, name, Family::Log, params)])
    }
}
