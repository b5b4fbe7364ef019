//! The exact trailing-window count of every key: `max_in_window`, its worst key,
//! `excess`, and the series of one key's count, from each admission as it is counted.
//!
//! Never sampled: one FIFO of the admissions still inside the window, for all keys
//! together, with a running count per key.

use std::collections::{HashMap, VecDeque};

use crate::time::Nanos;

/// One admission still inside the trailing window (or a part of one: see
/// [`WindowTracker::queue`]), for every lane in `lanes`.
#[derive(Debug, Clone, Copy)]
struct Admission {
    at: Nanos,
    key: u32,
    cost: u32,
    /// Bit `l`: lane `l` admitted it.
    lanes: Lanes,
}

/// A set of lanes, one bit each.
pub(crate) type Lanes = u8;

/// The most lanes one tracker counts (one bit each in [`Lanes`]).
pub(crate) const MAX_LANES: usize = Lanes::BITS as usize;

/// The mark in [`WindowTracker`]'s per-key counts of a count kept in its `wide` map.
const WIDE: u32 = u32::MAX;

/// What one lane of a [`WindowTracker`] found: its maximum, worst key and excess, and
/// the key whose count changes it reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Lane {
    /// The key whose count changes are reported (see [`WindowTracker::admit`]): the one
    /// chosen with [`track`](WindowTracker::track), else the first admitted.
    pub(crate) tracked: Option<u32>,
    /// The largest count the tracked key reached.
    pub(crate) tracked_max: u64,
    pub(crate) max: u64,
    pub(crate) worst_key: Option<u32>,
    pub(crate) excess: u64,
}

/// Exact `max_in_window` and `excess` over every key, for one algorithm or for several
/// at once (its *lanes*: algorithms that see the same arrivals at the same instants
/// under the same rule, each admitting its own).
///
/// The count in `(t − W, t]` only rises at an admission, so its maximum over all real
/// `t` is reached at some admission instant: checking after each admission is exact.
///
/// Admissions arrive in time order, so one FIFO of every admission still inside the
/// window, for all keys together, expires them in order, and each key keeps only its
/// running count: an admission touches the FIFO's two ends (sequential memory) and one
/// small counter, instead of a queue of its own per key. Same entries, same counts as a
/// deque per key, at a fraction of the cache misses when keys are many.
///
/// With lanes, an arrival admitted by several is one entry naming them all, and a key's
/// counts of every lane sit side by side: one FIFO entry and one cache line per arrival
/// instead of one of each per algorithm. Each lane's counts, changes and results are
/// exactly those of a tracker of its own (`tests`: `lanes_count_as_trackers_of_their_own`).
#[derive(Debug)]
pub(crate) struct WindowTracker {
    window: u64,
    limit: u64,
    /// Every admission with `at + W > ` the latest instant seen, oldest first.
    live: VecDeque<Admission>,
    /// Per key and lane (`key × lanes + lane`): the cost of its admissions in `live`,
    /// or [`WIDE`] when that is `WIDE` or more. Four bytes each, so a busy run's counts
    /// take half the cache they would as `u64`s.
    counts: Vec<u32>,
    /// The counts marked [`WIDE`] in `counts`, by index (a cost of billions in one
    /// window: never, in practice).
    wide: HashMap<usize, u64>,
    lanes: Vec<Lane>,
    /// Per lane: the tracked key's expiry not yet reported, during an `expire`.
    pending: Vec<Option<(Nanos, Nanos, u64)>>,
}

impl WindowTracker {
    /// A tracker of one lane.
    pub(crate) fn new(window: Nanos, limit: u64) -> WindowTracker {
        WindowTracker::with_lanes(window, limit, 1)
    }

    /// A tracker of `lanes` lanes (1 to [`MAX_LANES`]).
    pub(crate) fn with_lanes(window: Nanos, limit: u64, lanes: usize) -> WindowTracker {
        assert!(
            (1..=MAX_LANES).contains(&lanes),
            "1 to {MAX_LANES} lanes, not {lanes}"
        );
        WindowTracker {
            window: window.as_u64(),
            limit,
            live: VecDeque::new(),
            counts: Vec::new(),
            wide: HashMap::new(),
            lanes: vec![Lane::default(); lanes],
            pending: vec![None; lanes],
        }
    }

    /// What lane `lane` found so far.
    pub(crate) fn lane(&self, lane: usize) -> Lane {
        self.lanes[lane]
    }

    /// Follows `key`'s count in every lane (instead of each lane's first admitted
    /// key): its changes go to the `on_tracked_change` of every call.
    pub(crate) fn track(&mut self, key: u32) {
        for lane in &mut self.lanes {
            lane.tracked = Some(key);
        }
    }

    /// Records an admission of `cost` for `key` at `t` in lane 0 (instants never
    /// decrease) and returns the key's count in `(t − W, t]`. `on_tracked_change(instant,
    /// count)` hears every change of the tracked key's count, expiries included (at the
    /// instant they happen), so the caller can draw it as a step function.
    pub(crate) fn admit(
        &mut self,
        key: u32,
        t: Nanos,
        cost: u64,
        mut on_tracked_change: impl FnMut(Nanos, u64),
    ) -> u64 {
        self.admit_one(key, t, cost, 1, &mut |_, t, c| on_tracked_change(t, c))
    }

    /// [`admit`](Self::admit) of each `(key, instant, cost)` of `admissions` in turn, in
    /// one loop: a chunk's admissions are counted without a call, and its saved
    /// registers, per admission.
    pub(crate) fn admit_all(
        &mut self,
        admissions: &[(u32, Nanos, u64)],
        mut on_tracked_change: impl FnMut(Nanos, u64),
    ) {
        self.admit_each(
            admissions,
            |(key, t, cost)| (key, t, cost, 1),
            |_, t, c| on_tracked_change(t, c),
        );
    }

    /// [`admit_all`](Self::admit_all) of `(key, instant, cost, lanes)`: each admission
    /// counted in every lane of `lanes`. `on_tracked_change(lane, instant, count)`.
    pub(crate) fn admit_lanes(
        &mut self,
        admissions: &[(u32, Nanos, u64, Lanes)],
        on_tracked_change: impl FnMut(usize, Nanos, u64),
    ) {
        self.admit_each(admissions, |admission| admission, on_tracked_change);
    }

    /// The loop of [`admit_all`](Self::admit_all) and [`admit_lanes`](Self::admit_lanes):
    /// each admission, read as `(key, instant, cost, lanes)` by `parts`, counted in
    /// turn, the key `AHEAD` places on hinted first.
    #[inline(always)]
    fn admit_each<T: Copy>(
        &mut self,
        admissions: &[T],
        parts: impl Fn(T) -> (u32, Nanos, u64, Lanes),
        mut on_tracked_change: impl FnMut(usize, Nanos, u64),
    ) {
        for (i, &admission) in admissions.iter().enumerate() {
            if let Some(&ahead) = admissions.get(i + crate::prefetch::AHEAD) {
                self.prefetch(parts(ahead).0);
            }
            let (key, t, cost, lanes) = parts(admission);
            self.admit_one(key, t, cost, lanes, &mut on_tracked_change);
        }
    }

    /// Where `key`'s row starts in `counts`: its count in lane `l` is at `row + l`.
    #[inline(always)]
    fn row(&self, key: u32) -> usize {
        key as usize * self.lanes.len()
    }

    /// Counts one admission in each lane of `lanes`; returns the key's count in the last
    /// of them (in lane 0 for [`admit`](Self::admit)).
    #[inline(always)]
    fn admit_one(
        &mut self,
        key: u32,
        t: Nanos,
        cost: u64,
        lanes: Lanes,
        on_tracked_change: &mut impl FnMut(usize, Nanos, u64),
    ) -> u64 {
        self.expire(t, on_tracked_change);
        let row = self.row(key);
        if row + self.lanes.len() > self.counts.len() {
            self.counts.resize(row + self.lanes.len(), 0);
        }
        self.queue(key, t, cost, lanes);
        let mut count = 0;
        let mut bits = lanes;
        while bits != 0 {
            let l = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            count = self.add(row + l, cost);
            let lane = &mut self.lanes[l];
            if *lane.tracked.get_or_insert(key) == key {
                lane.tracked_max = lane.tracked_max.max(count);
                on_tracked_change(l, t, count);
            }
            if count > self.limit {
                lane.excess += 1;
            }
            if count > lane.max {
                lane.max = count;
                lane.worst_key = Some(key);
            }
        }
        count
    }

    /// Puts an admission at the back of the queue, added to the last entry when that is
    /// the same key at the same instant in the same lanes. A cost over `u32::MAX` (a
    /// count no limit of ours admits in practice) goes in parts of at most `u32::MAX`:
    /// the parts of one key and instant expire in the same call and are heard as one
    /// change (see [`expire`](Self::expire)), so the counts and the changes are the same.
    #[inline(always)]
    fn queue(&mut self, key: u32, t: Nanos, cost: u64, lanes: Lanes) {
        if let Some(last) = self.live.back_mut()
            && last.at == t
            && last.key == key
            && last.lanes == lanes
            && let Ok(sum) = u32::try_from(u64::from(last.cost) + cost)
        {
            last.cost = sum;
            return;
        }
        match u32::try_from(cost) {
            Ok(cost) => self.live.push_back(Admission {
                at: t,
                key,
                cost,
                lanes,
            }),
            Err(_) => self.queue_in_parts(key, t, cost, lanes),
        }
    }

    /// [`queue`](Self::queue) of a cost over `u32::MAX`, as several entries.
    #[cold]
    fn queue_in_parts(&mut self, key: u32, t: Nanos, cost: u64, lanes: Lanes) {
        let mut rest = cost;
        while rest > 0 {
            let part = rest.min(u64::from(u32::MAX));
            self.live.push_back(Admission {
                at: t,
                key,
                cost: part as u32, // at most u32::MAX, just above
                lanes,
            });
            rest -= part;
        }
    }

    /// Adds `cost` to the count at `index`; returns the new count.
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
    /// `wide`, marked in `counts`.
    #[cold]
    fn add_wide(&mut self, index: usize, cost: u64) -> u64 {
        let narrow = std::mem::replace(&mut self.counts[index], WIDE);
        let count = self.wide.entry(index).or_insert(u64::from(narrow));
        *count += cost;
        *count
    }

    /// Takes `cost` from the count at `index`; returns the new count.
    #[inline(always)]
    fn subtract(&mut self, index: usize, cost: u32) -> u64 {
        let narrow = &mut self.counts[index];
        if *narrow != WIDE {
            *narrow -= cost;
            return u64::from(*narrow);
        }
        self.subtract_wide(index, cost)
    }

    /// [`subtract`](Self::subtract) for a count marked [`WIDE`]: it moves back to
    /// `counts` once it is below `WIDE`.
    #[cold]
    fn subtract_wide(&mut self, index: usize, cost: u32) -> u64 {
        let wide = (self.wide.get_mut(&index)).expect("a count marked WIDE is in `wide`");
        *wide -= u64::from(cost);
        let count = *wide;
        if let Ok(narrow) = u32::try_from(count)
            && narrow != WIDE
        {
            self.wide.remove(&index);
            self.counts[index] = narrow;
        }
        count
    }

    /// A hint that `key` will be admitted soon: its counts may start loading into the
    /// cache. Changes nothing.
    #[inline]
    pub(crate) fn prefetch(&self, key: u32) {
        if let Some(count) = self.counts.get(self.row(key)) {
            crate::prefetch::prefetch(count);
        }
    }

    /// Reports the tracked key's remaining expiries up to `end` (the final steps down).
    pub(crate) fn finish(&mut self, end: Nanos, mut on_tracked_change: impl FnMut(Nanos, u64)) {
        self.expire(end, &mut |_, t, c| on_tracked_change(t, c));
    }

    /// [`finish`](Self::finish) of every lane: `on_tracked_change(lane, instant, count)`.
    pub(crate) fn finish_lanes(
        &mut self,
        end: Nanos,
        mut on_tracked_change: impl FnMut(usize, Nanos, u64),
    ) {
        self.expire(end, &mut on_tracked_change);
    }

    /// Drops admissions that no longer count at `t`: one at `a` counts in `(t − W, t]`
    /// exactly while `a + W > t`, that is `a > t − W` (all of them while `t < W`).
    ///
    /// A lane's tracked key hears one change per admission instant that expires: the
    /// FIFO can hold several entries for one key and instant (another key admitted
    /// between them), and they all expire in the same call, so they are reported
    /// together, with the count after the last of them — never a count that held at no
    /// instant.
    fn expire(&mut self, t: Nanos, on_tracked_change: &mut impl FnMut(usize, Nanos, u64)) {
        let Some(cutoff) = t.as_u64().checked_sub(self.window) else {
            return;
        };
        // The lanes with an expiry of their tracked key not yet reported.
        let mut pending: Lanes = 0;
        while let Some(&Admission {
            at,
            cost,
            key,
            lanes,
        }) = self.live.front()
        {
            if at.as_u64() > cutoff {
                break;
            }
            self.live.pop_front();
            if let Some(ahead) = self.live.get(crate::prefetch::AHEAD) {
                self.prefetch(ahead.key);
            }
            let row = self.row(key);
            let mut bits = lanes;
            while bits != 0 {
                let l = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let count = self.subtract(row + l, cost);
                if self.lanes[l].tracked == Some(key) {
                    if let Some((before, instant, c)) = self.pending[l]
                        && before != at
                    {
                        on_tracked_change(l, instant, c);
                    }
                    let expiry = Nanos::new(at.as_u64().saturating_add(self.window));
                    self.pending[l] = Some((at, expiry, count));
                    pending |= 1 << l;
                }
            }
        }
        while pending != 0 {
            let l = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            if let Some((_, instant, c)) = self.pending[l].take() {
                on_tracked_change(l, instant, c);
            }
        }
    }
}

#[cfg(test)]
mod tests;
