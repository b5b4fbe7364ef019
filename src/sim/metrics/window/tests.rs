//! The window tracker's tests: exact counts, the changes heard, wide counts, batches
//! and lanes.

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
    assert_eq!(
        (tracker.lane(0).max, tracker.lane(0).worst_key),
        (3, Some(0))
    );
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
        tracker.lane(0).excess,
        2,
        "the admissions at 2 and 3 left it above 2"
    );
    assert_eq!(
        (tracker.lane(0).max, tracker.lane(0).worst_key),
        (4, Some(0))
    );
}

#[test]
fn excess_is_counted_for_every_key_not_only_the_tracked_one() {
    let mut tracker = WindowTracker::new(Nanos::new(100), 1);
    tracker.track(0);
    tracker.admit(0, Nanos::new(1), 1, |_, _| {});
    tracker.admit(1, Nanos::new(2), 1, |_, _| {});
    tracker.admit(1, Nanos::new(3), 2, |_, _| {});
    assert_eq!(
        tracker.lane(0).excess,
        1,
        "only key 1's second admission is over"
    );
    assert_eq!(
        (tracker.lane(0).max, tracker.lane(0).worst_key),
        (3, Some(1))
    );
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
    assert_eq!(
        (tracker.lane(0).tracked, tracker.lane(0).tracked_max),
        (Some(1), 3)
    );
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
    assert_eq!(
        (tracker.lane(0).tracked, tracker.lane(0).tracked_max),
        (Some(2), 1)
    );
    assert_eq!(
        (tracker.lane(0).max, tracker.lane(0).worst_key),
        (5, Some(0))
    );
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
    assert_eq!(tracker.lane(0).max, 3);
    assert_eq!(
        tracker.lane(0).worst_key,
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
    assert_eq!(
        (tracker.lane(0).max, tracker.lane(0).worst_key),
        (big + 4, Some(0))
    );
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
    assert_eq!(
        (tracker.lane(0).max, tracker.lane(0).worst_key),
        (max + 5, Some(0))
    );
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
    assert_eq!(
        (tracker.lane(0).max, tracker.lane(0).worst_key),
        (max + 3, Some(0))
    );
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
        let summary = |w: &WindowTracker| {
            (
                w.lane(0).max,
                w.lane(0).worst_key,
                w.lane(0).excess,
                w.lane(0).tracked,
                w.lane(0).tracked_max,
            )
        };
        assert_eq!(summary(&one), summary(&all), "round {round}");
        assert_eq!(heard_one, heard_all, "round {round}");
    }
}

/// Each lane of a tracker counts exactly as a tracker of its own fed only that
/// lane's admissions: the same results and the same changes heard, in order, over
/// random batches with repeated instants, shared and separate admissions, costs
/// that merge and costs over `u32::MAX`.
#[test]
fn lanes_count_as_trackers_of_their_own() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(30);
    for round in 0..300 {
        let window = Nanos::new(rng.random_range(1..50));
        let limit = rng.random_range(1..6);
        let n = rng.random_range(1..=MAX_LANES);
        let mut lanes = WindowTracker::with_lanes(window, limit, n);
        let mut own: Vec<WindowTracker> =
            (0..n).map(|_| WindowTracker::new(window, limit)).collect();
        if round % 3 == 0 {
            lanes.track(2);
            own.iter_mut().for_each(|o| o.track(2));
        }
        let mut heard_lanes = vec![Vec::new(); n];
        let mut heard_own = vec![Vec::new(); n];
        let mut t = 0;
        for _ in 0..rng.random_range(1..8) {
            let batch: Vec<(u32, Nanos, u64, Lanes)> = (0..rng.random_range(0..40))
                .map(|_| {
                    t += rng.random_range(0..4);
                    let cost = match rng.random_range(0..50) {
                        0 => u64::from(u32::MAX) + rng.random_range(0..3),
                        _ => rng.random_range(1..4),
                    };
                    let mask = rng.random_range(1..=u16::from(Lanes::MAX)) as Lanes;
                    let mask = mask & (Lanes::MAX >> (MAX_LANES - n));
                    (rng.random_range(0..5), Nanos::new(t), cost, mask)
                })
                .filter(|&(_, _, _, mask)| mask != 0)
                .collect();
            for &(key, at, cost, mask) in &batch {
                for (l, o) in own.iter_mut().enumerate() {
                    if mask & (1 << l) != 0 {
                        o.admit(key, at, cost, |t, c| heard_own[l].push((t, c)));
                    }
                }
            }
            lanes.admit_lanes(&batch, |l, t, c| heard_lanes[l].push((t, c)));
        }
        let end = Nanos::new(t + 100);
        for (l, o) in own.iter_mut().enumerate() {
            o.finish(end, |t, c| heard_own[l].push((t, c)));
        }
        lanes.finish_lanes(end, |l, t, c| heard_lanes[l].push((t, c)));
        for (l, o) in own.iter().enumerate() {
            assert_eq!(lanes.lane(l), o.lane(0), "round {round}, lane {l}");
            assert_eq!(heard_lanes[l], heard_own[l], "round {round}, lane {l}");
        }
    }
}
