//! The exact trailing-window count of every key: `max_in_window`, its worst key,
//! `excess`, and the series of one key's count, from each admission as it is counted.
//!
//! Never sampled: one FIFO of the admissions still inside the window, for all keys
//! together, with a running count per key.

use std::collections::{HashMap, VecDeque};

use crate::time::Nanos;

/// One admission still inside the trailing window (or a part of one: see
/// [`WindowTracker::queue`]). Sixteen bytes, so the queue of a busy window streams
/// through the cache a third faster than with a `u64` cost.
#[derive(Debug, Clone, Copy)]
struct Admission {
    at: Nanos,
    key: u32,
    cost: u32,
}

/// The mark in [`WindowTracker`]'s per-key counts of a count kept in its `wide` map.
const WIDE: u32 = u32::MAX;

/// Exact `max_in_window` and `excess` over every key.
///
/// The count in `(t − W, t]` only rises at an admission, so its maximum over all real
/// `t` is reached at some admission instant: checking after each admission is exact.
///
/// Admissions arrive in time order, so one FIFO of every admission still inside the
/// window, for all keys together, expires them in order, and each key keeps only its
/// running count: an admission touches the FIFO's two ends (sequential memory) and one
/// small counter, instead of a queue of its own per key. Same entries, same counts as a
/// deque per key, at a fraction of the cache misses when keys are many.
#[derive(Debug)]
pub(crate) struct WindowTracker {
    window: u64,
    limit: u64,
    /// Every admission with `at + W > ` the latest instant seen, oldest first.
    live: VecDeque<Admission>,
    /// Per key: the cost of its admissions in `live`, or [`WIDE`] when that is `WIDE`
    /// or more. Four bytes a key, so a busy run's counts take half the cache they
    /// would as `u64`s.
    counts: Vec<u32>,
    /// The counts of the keys marked [`WIDE`] in `counts` (a cost of billions in one
    /// window: never, in practice).
    wide: HashMap<u32, u64>,
    /// The key whose count changes are reported (see [`WindowTracker::admit`]): the
    /// one chosen with [`track`](WindowTracker::track), else the first admitted.
    pub(crate) tracked: Option<u32>,
    /// The largest count the tracked key reached.
    pub(crate) tracked_max: u64,
    pub(crate) max: u64,
    pub(crate) worst_key: Option<u32>,
    pub(crate) excess: u64,
}

impl WindowTracker {
    pub(crate) fn new(window: Nanos, limit: u64) -> WindowTracker {
        WindowTracker {
            window: window.as_u64(),
            limit,
            live: VecDeque::new(),
            counts: Vec::new(),
            wide: HashMap::new(),
            tracked: None,
            tracked_max: 0,
            max: 0,
            worst_key: None,
            excess: 0,
        }
    }

    /// Follows `key`'s count (instead of the first admitted key's): its changes go to
    /// the `on_tracked_change` of every call.
    pub(crate) fn track(&mut self, key: u32) {
        self.tracked = Some(key);
    }

    /// Records an admission of `cost` for `key` at `t` (instants never decrease) and
    /// returns the key's count in `(t − W, t]`. `on_tracked_change(instant, count)`
    /// hears every change of the tracked key's count, expiries included (at the instant
    /// they happen), so the caller can draw it as a step function.
    pub(crate) fn admit(
        &mut self,
        key: u32,
        t: Nanos,
        cost: u64,
        mut on_tracked_change: impl FnMut(Nanos, u64),
    ) -> u64 {
        self.admit_one(key, t, cost, &mut on_tracked_change)
    }

    /// [`admit`](Self::admit) of each `(key, instant, cost)` of `admissions` in turn, in
    /// one loop: a chunk's admissions are counted without a call, and its saved
    /// registers, per admission.
    pub(crate) fn admit_all(
        &mut self,
        admissions: &[(u32, Nanos, u64)],
        mut on_tracked_change: impl FnMut(Nanos, u64),
    ) {
        for (i, &(key, t, cost)) in admissions.iter().enumerate() {
            if let Some(&(ahead, _, _)) = admissions.get(i + crate::prefetch::AHEAD) {
                self.prefetch(ahead);
            }
            self.admit_one(key, t, cost, &mut on_tracked_change);
        }
    }

    #[inline(always)]
    fn admit_one(
        &mut self,
        key: u32,
        t: Nanos,
        cost: u64,
        on_tracked_change: &mut impl FnMut(Nanos, u64),
    ) -> u64 {
        self.expire(t, on_tracked_change);
        let index = key as usize;
        if index >= self.counts.len() {
            self.counts.resize(index + 1, 0);
        }
        self.queue(key, t, cost);
        let count = self.add(index, cost);
        if *self.tracked.get_or_insert(key) == key {
            self.tracked_max = self.tracked_max.max(count);
            on_tracked_change(t, count);
        }
        if count > self.limit {
            self.excess += 1;
        }
        if count > self.max {
            self.max = count;
            self.worst_key = Some(key);
        }
        count
    }

    /// Puts an admission at the back of the queue, added to the last entry when that is
    /// the same key at the same instant. A cost over `u32::MAX` (a count no limit of
    /// ours admits in practice) goes in parts of at most `u32::MAX`: the parts of one
    /// key and instant expire in the same call and are heard as one change (see
    /// [`expire`](Self::expire)), so the counts and the changes are the same.
    #[inline(always)]
    fn queue(&mut self, key: u32, t: Nanos, cost: u64) {
        if let Some(last) = self.live.back_mut()
            && last.at == t
            && last.key == key
            && let Ok(sum) = u32::try_from(u64::from(last.cost) + cost)
        {
            last.cost = sum;
            return;
        }
        match u32::try_from(cost) {
            Ok(cost) => self.live.push_back(Admission { at: t, key, cost }),
            Err(_) => self.queue_in_parts(key, t, cost),
        }
    }

    /// [`queue`](Self::queue) of a cost over `u32::MAX`, as several entries.
    #[cold]
    fn queue_in_parts(&mut self, key: u32, t: Nanos, cost: u64) {
        let mut rest = cost;
        while rest > 0 {
            let part = rest.min(u64::from(u32::MAX));
            self.live.push_back(Admission {
                at: t,
                key,
                cost: part as u32, // at most u32::MAX, just above
            });
            rest -= part;
        }
    }

    /// Adds `cost` to the count of the key at `index`; returns the new count.
    #[inline(always)]
    fn add(&mut self, index: usize, cost: u64) -> u64 {
        let narrow = self.counts[index];
        if narrow != WIDE {
            let sum = u64::from(narrow) + cost;
            if sum < u64::from(WIDE) {
                self.counts[index] = sum as u32; // below u32::MAX, just above
                return sum;
            }
        }
        self.add_wide(index, cost)
    }

    /// [`add`](Self::add) for a count that is or becomes [`WIDE`] or more: kept in
    /// `wide`, the key marked in `counts`.
    #[cold]
    fn add_wide(&mut self, index: usize, cost: u64) -> u64 {
        let narrow = std::mem::replace(&mut self.counts[index], WIDE);
        let count = (self.wide)
            .entry(index as u32) // a key's index is the key, a u32
            .or_insert(u64::from(narrow));
        *count += cost;
        *count
    }

    /// Takes `cost` from the count of the key at `index`; returns the new count.
    #[inline(always)]
    fn subtract(&mut self, index: usize, cost: u32) -> u64 {
        let narrow = &mut self.counts[index];
        if *narrow != WIDE {
            *narrow -= cost;
            return u64::from(*narrow);
        }
        self.subtract_wide(index, cost)
    }

    /// [`subtract`](Self::subtract) for a key marked [`WIDE`]: its count moves back to
    /// `counts` once it is below `WIDE`.
    #[cold]
    fn subtract_wide(&mut self, index: usize, cost: u32) -> u64 {
        let key = index as u32; // a key's index is the key, a u32
        let wide = (self.wide.get_mut(&key)).expect("a key marked WIDE has its count in `wide`");
        *wide -= u64::from(cost);
        let count = *wide;
        if let Ok(narrow) = u32::try_from(count)
            && narrow != WIDE
        {
            self.wide.remove(&key);
            self.counts[index] = narrow;
        }
        count
    }

    /// A hint that `key` will be admitted soon: its count may start loading into the
    /// cache. Changes nothing.
    #[inline]
    pub(crate) fn prefetch(&self, key: u32) {
        if let Some(count) = self.counts.get(key as usize) {
            crate::prefetch::prefetch(count);
        }
    }

    /// Reports the tracked key's remaining expiries up to `end` (the final steps down).
    pub(crate) fn finish(&mut self, end: Nanos, mut on_tracked_change: impl FnMut(Nanos, u64)) {
        self.expire(end, &mut on_tracked_change);
    }

    /// Drops admissions that no longer count at `t`: one at `a` counts in `(t − W, t]`
    /// exactly while `a + W > t`, that is `a > t − W` (all of them while `t < W`).
    ///
    /// The tracked key hears one change per admission instant that expires: the FIFO
    /// can hold several entries for one key and instant (another key admitted between
    /// them), and they all expire in the same call, so they are reported together,
    /// with the count after the last of them — never a count that held at no instant.
    fn expire(&mut self, t: Nanos, on_tracked_change: &mut impl FnMut(Nanos, u64)) {
        let Some(cutoff) = t.as_u64().checked_sub(self.window) else {
            return;
        };
        // The tracked key's expiry not yet reported: (admission instant, expiry, count).
        let mut pending: Option<(Nanos, Nanos, u64)> = None;
        while let Some(&Admission { at, cost, key }) = self.live.front() {
            if at.as_u64() > cutoff {
                break;
            }
            self.live.pop_front();
            if let Some(ahead) = self.live.get(crate::prefetch::AHEAD) {
                self.prefetch(ahead.key);
            }
            let count = self.subtract(key as usize, cost);
            if self.tracked == Some(key) {
                if let Some((before, instant, c)) = pending
                    && before != at
                {
                    on_tracked_change(instant, c);
                }
                let expiry = Nanos::new(at.as_u64().saturating_add(self.window));
                pending = Some((at, expiry, count));
            }
        }
        if let Some((_, instant, c)) = pending {
            on_tracked_change(instant, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracked_key_hears_one_expiry_per_admission_instant() {
        // A, B, A at one instant: the FIFO holds A twice, not merged, but A's count
        // steps 0 → 1 → 2 → 0, with no made-up "1" at the expiry instant.
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        tracker.track(0);
        let mut heard = Vec::new();
        let mut on = |t: Nanos, c: u64| heard.push((t.as_u64(), c));
        tracker.admit(0, Nanos::new(5), 1, &mut on);
        tracker.admit(1, Nanos::new(5), 1, &mut on);
        tracker.admit(0, Nanos::new(5), 1, &mut on);
        tracker.admit(0, Nanos::new(7), 1, &mut on);
        tracker.admit(1, Nanos::new(17), 1, &mut on);
        tracker.finish(Nanos::new(100), &mut on);
        assert_eq!(heard, [(5, 1), (5, 2), (7, 3), (15, 1), (17, 0)]);
        assert_eq!((tracker.max, tracker.worst_key), (3, Some(0)));
    }

    #[test]
    fn excess_counts_each_admission_that_leaves_the_window_over_the_limit() {
        // Limit 2 in 10 ns: the third and fourth admissions inside one window are over;
        // once the early ones expire, the count only reaches the limit again, which is
        // not excess.
        let mut tracker = WindowTracker::new(Nanos::new(10), 2);
        let counts: Vec<u64> = [0, 1, 2, 3, 12, 13]
            .into_iter()
            .map(|t| tracker.admit(0, Nanos::new(t), 1, |_, _| {}))
            .collect();
        assert_eq!(counts, [1, 2, 3, 4, 2, 2]);
        assert_eq!(
            tracker.excess, 2,
            "the admissions at 2 and 3 left it above 2"
        );
        assert_eq!((tracker.max, tracker.worst_key), (4, Some(0)));
    }

    #[test]
    fn excess_is_counted_for_every_key_not_only_the_tracked_one() {
        let mut tracker = WindowTracker::new(Nanos::new(100), 1);
        tracker.track(0);
        tracker.admit(0, Nanos::new(1), 1, |_, _| {});
        tracker.admit(1, Nanos::new(2), 1, |_, _| {});
        tracker.admit(1, Nanos::new(3), 2, |_, _| {});
        assert_eq!(tracker.excess, 1, "only key 1's second admission is over");
        assert_eq!((tracker.max, tracker.worst_key), (3, Some(1)));
    }

    #[test]
    fn a_tracked_key_is_the_one_whose_count_changes_are_reported() {
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        tracker.track(1);
        let mut heard = Vec::new();
        let mut on = |t: Nanos, c: u64| heard.push((t.as_u64(), c));
        tracker.admit(0, Nanos::new(1), 1, &mut on);
        tracker.admit(1, Nanos::new(2), 3, &mut on);
        tracker.admit(0, Nanos::new(4), 1, &mut on);
        tracker.finish(Nanos::new(50), &mut on);
        assert_eq!(
            heard,
            [(2, 3), (12, 0)],
            "key 1 only, though key 0 came first"
        );
        assert_eq!((tracker.tracked, tracker.tracked_max), (Some(1), 3));
    }

    #[test]
    fn without_a_tracked_key_the_first_admitted_key_is_followed() {
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        let mut heard = Vec::new();
        let mut on = |t: Nanos, c: u64| heard.push((t.as_u64(), c));
        tracker.admit(2, Nanos::new(1), 1, &mut on);
        tracker.admit(0, Nanos::new(2), 5, &mut on);
        tracker.finish(Nanos::new(50), &mut on);
        assert_eq!(heard, [(1, 1), (11, 0)]);
        assert_eq!((tracker.tracked, tracker.tracked_max), (Some(2), 1));
        assert_eq!((tracker.max, tracker.worst_key), (5, Some(0)));
    }

    #[test]
    fn admissions_of_one_key_at_one_instant_expire_together_to_zero() {
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        let mut heard = Vec::new();
        let mut on = |t: Nanos, c: u64| heard.push((t.as_u64(), c));
        tracker.admit(0, Nanos::new(5), 2, &mut on);
        tracker.admit(0, Nanos::new(5), 3, &mut on);
        assert_eq!(tracker.admit(0, Nanos::new(14), 1, &mut on), 6);
        assert_eq!(
            tracker.admit(0, Nanos::new(15), 1, &mut on),
            2,
            "2 + 3 gone at 15"
        );
        tracker.finish(Nanos::new(100), &mut on);
        assert_eq!(
            heard,
            [(5, 2), (5, 5), (14, 6), (15, 1), (15, 2), (24, 1), (25, 0)]
        );
    }

    #[test]
    fn the_worst_key_is_the_first_to_reach_the_maximum_not_a_later_tie() {
        let mut tracker = WindowTracker::new(Nanos::new(100), 100);
        for (key, t) in [(3, 1), (3, 2), (5, 3), (5, 4), (5, 60), (3, 61)] {
            tracker.admit(key, Nanos::new(t), 1, |_, _| {});
        }
        assert_eq!(tracker.max, 3);
        assert_eq!(
            tracker.worst_key,
            Some(5),
            "5 reached 3 at 60, 3 only at 61"
        );
    }

    #[test]
    fn an_admission_counts_until_exactly_one_window_after_it() {
        // Counted in (t − W, t]: at 0 + 10 it has just expired, at 9 it still counts.
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        assert_eq!(tracker.admit(0, Nanos::new(0), 1, |_, _| {}), 1);
        assert_eq!(tracker.admit(0, Nanos::new(9), 1, |_, _| {}), 2);
        assert_eq!(tracker.admit(0, Nanos::new(10), 1, |_, _| {}), 2);
        assert_eq!(tracker.admit(0, Nanos::new(19), 1, |_, _| {}), 2);
    }

    #[test]
    fn a_cost_over_u32_max_counts_whole_and_expires_as_one_change() {
        // Queued in parts (u32::MAX, then 5, then 3 merged into the 5), but counted whole
        // and heard as one change at its expiry (key 0, tracked).
        let big = u64::from(u32::MAX) + 5;
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        let mut heard = Vec::new();
        let mut on = |t: Nanos, c: u64| heard.push((t.as_u64(), c));
        assert_eq!(tracker.admit(0, Nanos::new(1), big, &mut on), big);
        assert_eq!(tracker.admit(0, Nanos::new(1), 3, &mut on), big + 3);
        // Key 1: a big cost added to an entry already queued at its instant.
        assert_eq!(tracker.admit(1, Nanos::new(2), 1, &mut on), 1);
        assert_eq!(tracker.admit(1, Nanos::new(2), big, &mut on), big + 1);
        assert_eq!(tracker.admit(0, Nanos::new(4), 1, &mut on), big + 4);
        assert_eq!(tracker.admit(0, Nanos::new(11), 1, &mut on), 2);
        assert_eq!(
            tracker.admit(1, Nanos::new(12), 1, &mut on),
            1,
            "all of 2 gone"
        );
        tracker.finish(Nanos::new(100), &mut on);
        assert_eq!(
            heard,
            [
                (1, big),
                (1, big + 3),
                (4, big + 4),
                (11, 1),
                (11, 2),
                (14, 1),
                (21, 0)
            ]
        );
        assert_eq!((tracker.max, tracker.worst_key), (big + 4, Some(0)));
    }

    #[test]
    fn a_count_crossing_u32_max_is_kept_whole_both_ways() {
        // Key 0's count goes to exactly u32::MAX (the mark of a wide count), above it,
        // and back below it as admissions expire; key 1 stays small beside it.
        let max = u64::from(u32::MAX);
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        let mut heard = Vec::new();
        let mut on = |t: Nanos, c: u64| heard.push((t.as_u64(), c));
        assert_eq!(tracker.admit(0, Nanos::new(1), max - 1, &mut on), max - 1);
        assert_eq!(tracker.admit(0, Nanos::new(2), 1, &mut on), max);
        assert_eq!(tracker.admit(1, Nanos::new(2), 3, &mut on), 3);
        assert_eq!(tracker.admit(0, Nanos::new(3), 5, &mut on), max + 5);
        assert_eq!(
            tracker.admit(0, Nanos::new(11), 1, &mut on),
            7,
            "max - 1 gone"
        );
        assert_eq!(tracker.admit(1, Nanos::new(11), 1, &mut on), 4);
        assert_eq!(
            tracker.admit(0, Nanos::new(12), 2, &mut on),
            8,
            "1 gone, 2 in"
        );
        assert_eq!(
            tracker.admit(0, Nanos::new(30), max, &mut on),
            max,
            "all gone"
        );
        assert_eq!(tracker.admit(0, Nanos::new(45), 1, &mut on), 1);
        tracker.finish(Nanos::new(100), &mut on);
        assert_eq!(
            heard,
            [
                (1, max - 1),
                (2, max),
                (3, max + 5),
                (11, 6),
                (11, 7),
                (12, 6),
                (12, 8),
                (13, 3),
                (21, 2),
                (22, 0),
                (30, max),
                (40, 0),
                (45, 1),
                (55, 0)
            ]
        );
        assert_eq!((tracker.max, tracker.worst_key), (max + 5, Some(0)));
        assert!(tracker.wide.is_empty(), "every count back below the mark");
    }

    #[test]
    fn a_wide_count_falling_to_exactly_u32_max_stays_whole() {
        // u32::MAX is the mark, so a count of exactly u32::MAX stays in the side map on
        // the way down too, and leaves it only below the mark.
        let max = u64::from(u32::MAX);
        let mut tracker = WindowTracker::new(Nanos::new(10), 100);
        let mut on = |_: Nanos, _: u64| {};
        assert_eq!(tracker.admit(0, Nanos::new(1), 2, &mut on), 2);
        assert_eq!(tracker.admit(0, Nanos::new(2), max, &mut on), max + 2);
        assert_eq!(
            tracker.admit(1, Nanos::new(11), 1, &mut on),
            1,
            "key 0's 2 expire"
        );
        assert_eq!(
            tracker.wide.get(&0),
            Some(&max),
            "exactly the mark: still wide"
        );
        assert_eq!(
            tracker.admit(0, Nanos::new(11), 3, &mut on),
            max + 3,
            "counted on from the mark"
        );
        assert_eq!(
            tracker.admit(0, Nanos::new(12), 1, &mut on),
            4,
            "the big one expired"
        );
        assert!(tracker.wide.is_empty(), "back below the mark");
        assert_eq!((tracker.max, tracker.worst_key), (max + 3, Some(0)));
    }

    /// Counting a batch at once is counting each admission in turn: the same changes
    /// heard, in the same order, and the same maximum, worst key, excess and tracked
    /// maximum, over random batches with repeated instants, several keys and costs, in
    /// batches shorter and longer than the prefetch distance.
    #[test]
    fn a_batch_counts_exactly_as_one_admission_at_a_time() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
        for round in 0..200 {
            let window = Nanos::new(rng.random_range(1..50));
            let limit = rng.random_range(1..6);
            let (mut one, mut all) = (
                WindowTracker::new(window, limit),
                WindowTracker::new(window, limit),
            );
            if round % 3 == 0 {
                one.track(2);
                all.track(2);
            }
            let (mut heard_one, mut heard_all) = (Vec::new(), Vec::new());
            let mut t = 0;
            for _ in 0..rng.random_range(1..8) {
                let batch: Vec<(u32, Nanos, u64)> = (0..rng.random_range(0..40))
                    .map(|_| {
                        t += rng.random_range(0..4);
                        (
                            rng.random_range(0..5),
                            Nanos::new(t),
                            rng.random_range(1..4),
                        )
                    })
                    .collect();
                for &(key, at, cost) in &batch {
                    one.admit(key, at, cost, |t, c| heard_one.push((t, c)));
                }
                all.admit_all(&batch, |t, c| heard_all.push((t, c)));
            }
            let summary =
                |w: &WindowTracker| (w.max, w.worst_key, w.excess, w.tracked, w.tracked_max);
            assert_eq!(summary(&one), summary(&all), "round {round}");
            assert_eq!(heard_one, heard_all, "round {round}");
        }
    }
}
