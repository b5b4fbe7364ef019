//! The window-count series' thinning: the one place a run's trailing-window series is
//! reduced, to at most [`WINDOW_SAMPLES`] points, as it is recorded.
//!
//! Why here and only here: a single key's series changes at every admission and every
//! expiry (20 M points for 10 M requests), so it must be bounded while it streams in,
//! before it exists in full; and `window_counts.csv` is written from what this keeps, so
//! the file and the chart drawn from it share one rule. The report layer draws and
//! writes the kept points as they are and must not thin them again (it used to decimate
//! once more for the chart). Nothing here decides, counts or draws.

use super::{BucketCursor, WINDOW_SAMPLES, WindowSample};
use crate::time::Nanos;

/// Keeps a step function to at most [`WINDOW_SAMPLES`] points. Every point is kept
/// while they fit; past that, each time bucket keeps its first, lowest, highest and
/// last point: the extremes so no peak (or dip) is lost, and the last so the value that
/// holds until the next bucket is drawn correctly.
#[derive(Debug)]
pub(crate) struct SeriesThinner {
    bucket: BucketCursor,
    /// Every point, until there are too many; then empty.
    raw: Vec<WindowSample>,
    thinning: bool,
    /// Per bucket: first, low, high, last, each with its push order for sorting.
    points: Vec<Option<[(u64, WindowSample); 4]>>,
    pushed: u64,
    /// The latest point, held back until the instant moves on: the count at an instant
    /// is the count after everything that happened at it, so a later change at the
    /// same instant replaces it (in both modes).
    pending: Option<WindowSample>,
}

impl SeriesThinner {
    pub(crate) fn new(duration: Nanos) -> SeriesThinner {
        let buckets = WINDOW_SAMPLES / 4;
        let bucket = duration.as_u64().div_ceil(buckets).max(1);
        SeriesThinner {
            bucket: BucketCursor::new(Nanos::new(bucket)),
            raw: Vec::new(),
            thinning: false,
            points: vec![None; duration.as_u64().div_ceil(bucket) as usize],
            pushed: 0,
            pending: None,
        }
    }

    pub(crate) fn push(&mut self, time: Nanos, count: u64) {
        match self.pending.as_mut() {
            Some(p) if p.time == time => p.count = count,
            _ => {
                if let Some(done) = self.pending.replace(WindowSample { time, count }) {
                    self.keep(done);
                }
            }
        }
    }

    /// Keeps the final point of one instant.
    fn keep(&mut self, WindowSample { time, count }: WindowSample) {
        if !self.thinning {
            if (self.raw.len() as u64) < WINDOW_SAMPLES {
                self.raw.push(WindowSample { time, count });
                return;
            }
            self.thinning = true;
            for s in std::mem::take(&mut self.raw) {
                self.thin(s.time, s.count);
            }
        }
        self.thin(time, count);
    }

    fn thin(&mut self, time: Nanos, count: u64) {
        let sample = (self.pushed, WindowSample { time, count });
        self.pushed += 1;
        let Some(slot) = self.points.get_mut(self.bucket.index(time)) else {
            return;
        };
        match slot {
            None => *slot = Some([sample; 4]),
            Some([_, low, high, last]) => {
                if count < low.1.count {
                    *low = sample;
                }
                if count > high.1.count {
                    *high = sample;
                }
                *last = sample;
            }
        }
    }

    pub(crate) fn finish(mut self) -> Vec<WindowSample> {
        if let Some(done) = self.pending.take() {
            self.keep(done);
        }
        if !self.thinning {
            return self.raw;
        }
        let mut out = Vec::new();
        for mut kept in self.points.into_iter().flatten() {
            kept.sort_by_key(|(order, _)| *order);
            let mut previous = None;
            for (order, sample) in kept {
                if previous != Some(order) {
                    out.push(sample);
                    previous = Some(order);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_peak_of_every_bucket() {
        let mut t = SeriesThinner::new(Nanos::new(1_000_000));
        for i in 0..1_000_000u64 {
            t.push(Nanos::new(i), i % 997);
        }
        let out = t.finish();
        assert!(out.len() as u64 <= WINDOW_SAMPLES, "{} samples", out.len());
        assert_eq!(out.iter().map(|s| s.count).max(), Some(996));
        assert!(out.windows(2).all(|p| p[0].time <= p[1].time), "time order");
    }

    #[test]
    fn short_series_keep_every_instant() {
        let mut t = SeriesThinner::new(Nanos::from_secs(60));
        for i in 0..300 {
            t.push(Nanos::new(i / 3), i); // three changes per instant
        }
        let expected: Vec<_> = (0..100)
            .map(|i| WindowSample {
                time: Nanos::new(i),
                count: 3 * i + 2,
            })
            .collect();
        assert_eq!(
            t.finish(),
            expected,
            "one point per instant: its final value"
        );
    }

    #[test]
    fn a_series_of_exactly_the_sample_limit_is_kept_whole_and_one_more_is_thinned() {
        let whole = |n: u64| {
            let mut t = SeriesThinner::new(Nanos::from_secs(1));
            for i in 0..n {
                t.push(Nanos::new(i), i % 7);
            }
            t.finish()
        };
        let kept = whole(WINDOW_SAMPLES);
        assert_eq!(kept.len() as u64, WINDOW_SAMPLES, "every instant fits");
        assert!(
            kept.iter()
                .enumerate()
                .all(|(i, s)| s.time == Nanos::new(i as u64))
        );
        let thinned = whole(WINDOW_SAMPLES + 1);
        assert!(
            (thinned.len() as u64) <= WINDOW_SAMPLES,
            "{} samples for {} instants",
            thinned.len(),
            WINDOW_SAMPLES + 1
        );
        assert_eq!(thinned.first().map(|s| s.time), Some(Nanos::ZERO));
        assert_eq!(
            thinned.last().map(|s| s.time),
            Some(Nanos::new(WINDOW_SAMPLES))
        );
    }

    #[test]
    fn a_thinned_bucket_keeps_its_first_lowest_highest_and_last_points_in_time_order() {
        // Buckets of 60 s / 5 000 = 12 ms: the one at 24..36 ms holds a rise to 9, a
        // fall to 0, and flat stretches at both; 20 001 later instants force thinning.
        let mut t = SeriesThinner::new(Nanos::from_secs(60));
        let ms = |m: u64| Nanos::new(m * 1_000_000);
        let steps = [
            (24, 4),
            (25, 9),
            (26, 9),
            (27, 5),
            (28, 0),
            (29, 0),
            (30, 6),
            (35, 2),
        ];
        for (m, c) in steps {
            t.push(ms(m), c);
        }
        for i in 0..=WINDOW_SAMPLES {
            t.push(Nanos::from_secs(40) + Nanos::new(i), 3);
        }
        let out = t.finish();
        let bucket: Vec<(u64, u64)> = out
            .iter()
            .filter(|s| s.time >= ms(24) && s.time < ms(36))
            .map(|s| (s.time.as_u64() / 1_000_000, s.count))
            .collect();
        assert_eq!(
            bucket,
            [(24, 4), (25, 9), (28, 0), (35, 2)],
            "first, the peak and the dip where first reached, last"
        );
    }

    #[test]
    fn thinning_keeps_the_value_each_bucket_ends_on() {
        // Within one bucket the count drops from 5 to 0 and climbs back to 5; the
        // step that holds afterwards is the final 5, not the dip.
        let mut t = SeriesThinner::new(Nanos::from_secs(60));
        for i in 0..WINDOW_SAMPLES {
            t.push(Nanos::new(i), 1); // enough points to force thinning
        }
        let (a, b) = (Nanos::new(19_999_999_999), Nanos::from_secs(20));
        t.push(a, 5);
        t.push(b, 0);
        for c in 1..=5 {
            t.push(b + Nanos::new(c), c);
        }
        // Changes at one instant are one point: the count after all of them.
        let c = Nanos::from_secs(21);
        t.push(c, 1);
        t.push(c, 4);
        let out = t.finish();
        assert_eq!(
            out.last(),
            Some(&WindowSample { time: c, count: 4 }),
            "{out:?}"
        );
        assert!(
            out.contains(&WindowSample {
                time: b + Nanos::new(5),
                count: 5
            }),
            "the value the bucket ends on: {out:?}"
        );
        assert!(
            out.contains(&WindowSample { time: b, count: 0 }),
            "the dip is kept too"
        );
        assert_eq!(out.iter().filter(|s| s.time == c).count(), 1, "{out:?}");
    }
}
