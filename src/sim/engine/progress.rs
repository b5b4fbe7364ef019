//! Progress reporting: one counter shared by every worker thread, and each run's
//! ticker that converts its simulated time into progress units.
//!
//! Progress only observes; it never affects a result.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::time::Nanos;

/// Progress units per algorithm.
pub const PROGRESS_STEPS: u64 = 1_000;

/// The run's progress, shared by its worker threads.
pub(super) struct Progress<'a> {
    done: AtomicU64,
    total: u64,
    callback: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl<'a> Progress<'a> {
    /// A run of `algorithms` algorithms, reporting to `callback`.
    pub(super) fn new(
        algorithms: usize,
        callback: Option<&'a (dyn Fn(u64, u64) + Sync)>,
    ) -> Progress<'a> {
        Progress {
            done: AtomicU64::new(0),
            total: algorithms as u64 * PROGRESS_STEPS,
            callback,
        }
    }

    fn add(&self, units: u64) {
        if units == 0 {
            return;
        }
        let done = self.done.fetch_add(units, Ordering::Relaxed) + units;
        if let Some(callback) = self.callback {
            callback(done, self.total);
        }
    }
}

/// One algorithm's share of the progress: [`PROGRESS_STEPS`] units over its simulated
/// time, reported every 4096 decisions.
pub(super) struct ProgressTicker<'a> {
    progress: Option<&'a Progress<'a>>,
    duration: Nanos,
    events: u64,
    reported: u64,
}

impl<'a> ProgressTicker<'a> {
    /// `None`: a run that reports nothing (the silent second pass).
    pub(super) fn new(progress: Option<&'a Progress<'a>>, duration: Nanos) -> Self {
        ProgressTicker {
            progress,
            duration,
            events: 0,
            reported: 0,
        }
    }

    /// One decision was taken at `now`.
    #[inline]
    pub(super) fn tick(&mut self, now: Nanos) {
        self.events += 1;
        if self.events.is_multiple_of(4096)
            && let Some(p) = self.progress
        {
            let duration = self.duration.as_u64();
            let step = (u128::from(now.as_u64()) * u128::from(PROGRESS_STEPS)
                / u128::from(duration)) as u64;
            let step = step.min(PROGRESS_STEPS);
            p.add(step.saturating_sub(self.reported));
            self.reported = self.reported.max(step);
        }
    }

    /// The run is over: reports the units still missing.
    pub(super) fn finish(&mut self) {
        if let Some(p) = self.progress {
            p.add(PROGRESS_STEPS - self.reported);
            self.reported = PROGRESS_STEPS;
        }
    }
}
