//! One algorithm's decisions compared with the exact reference's, for open clients:
//! `false_allow` (admitted where the log denies) and `false_deny` (the reverse).
//!
//! It only counts; where the reference's decisions come from is `reference`'s concern.

use crate::sim::Metrics;

/// One algorithm's decisions compared with the reference's.
pub(super) struct Comparison {
    /// This run counts `false_allow` / `false_deny` against the reference.
    pub(super) wanted: bool,
    /// This run's decisions *are* the reference's (the sliding log on the scenario's
    /// rules; with several `[[limit]]`s the composite of logs, as the reference is).
    pub(super) is_reference: bool,
    false_allow: u64,
    false_deny: u64,
}

impl Comparison {
    /// `open`: open clients, and a run that reports (not the silent second pass);
    /// `is_log`: the algorithm is the built-in sliding log, the reference itself.
    pub(super) fn new(open: bool, is_log: bool) -> Comparison {
        let is_reference = open && is_log;
        Comparison {
            wanted: open && !is_reference,
            is_reference,
            false_allow: 0,
            false_deny: 0,
        }
    }

    /// Counts one decision against the reference's, when there is one.
    #[inline]
    pub(super) fn count(&mut self, allowed: bool, log_allowed: Option<bool>) {
        if self.wanted
            && let Some(log_allowed) = log_allowed
        {
            self.false_allow += u64::from(allowed && !log_allowed);
            self.false_deny += u64::from(!allowed && log_allowed);
        }
    }

    /// Writes the counts into the run's metrics (open clients only).
    pub(super) fn report(&self, m: &mut Metrics) {
        m.false_allow = Some(self.false_allow);
        m.false_deny = Some(self.false_deny);
    }
}
