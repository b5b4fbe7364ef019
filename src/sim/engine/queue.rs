//! The event queue of retry clients: request attempts ordered by time, same-instant
//! attempts in the order they were queued (an insertion counter, as in nexosim's
//! queue), so a run is deterministic by construction.
//!
//! It only orders events; it never decides one nor knows what a retry is.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::attempt::Event;
use crate::time::Nanos;

/// A min-heap on `(time, insertion order)`: same-instant events leave in FIFO order.
#[derive(Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Reverse<Queued>>,
    inserted: u64,
}

struct Queued {
    order: u64,
    event: Event,
}

impl Queued {
    fn key(&self) -> (Nanos, u64) {
        (self.event.time, self.order)
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl EventQueue {
    pub(super) fn push(&mut self, event: Event) {
        self.heap.push(Reverse(Queued {
            order: self.inserted,
            event,
        }));
        self.inserted += 1;
    }

    /// The earliest event, if it is due at or before `time`.
    #[inline]
    pub(super) fn pop_due(&mut self, time: Nanos) -> Option<Event> {
        if self.heap.peek()?.0.event.time > time {
            return None;
        }
        self.heap.pop().map(|Reverse(q)| q.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A retry attempt at `time` of the arrival numbered `seq`.
    fn at(time: u64, seq: u64) -> Event {
        Event {
            time: Nanos::new(time),
            seq,
            key: 0,
            cost: 1,
            attempt: 1,
            first: Nanos::ZERO,
        }
    }

    #[test]
    fn the_event_queue_is_fifo_among_equal_instants() {
        let mut q = EventQueue::default();
        for (t, s) in [(5, 0), (3, 1), (5, 2), (3, 3)] {
            q.push(at(t, s));
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop_due(Nanos::MAX))
            .map(|e| e.seq)
            .collect();
        assert_eq!(order, [1, 3, 0, 2]);
        assert!(q.pop_due(Nanos::ZERO).is_none());
    }

    /// Many attempts at one instant, among others, leave in exactly the order queued
    /// (a heap alone would shuffle them), and nothing leaves before it is due.
    #[test]
    fn many_attempts_at_one_instant_leave_in_the_order_they_were_queued() {
        let mut q = EventQueue::default();
        for seq in 0..40 {
            q.push(at(if seq % 3 == 0 { 9 } else { 7 }, seq));
        }
        let sevens: Vec<u64> = (0..40).filter(|s| s % 3 != 0).collect();
        let nines: Vec<u64> = (0..40).filter(|s| s % 3 == 0).collect();
        assert!(q.pop_due(Nanos::new(6)).is_none());
        let due_at_seven: Vec<u64> = std::iter::from_fn(|| q.pop_due(Nanos::new(7)))
            .map(|e| e.seq)
            .collect();
        assert_eq!(due_at_seven, sevens);
        assert!(q.pop_due(Nanos::new(8)).is_none());
        let due_at_nine: Vec<u64> = std::iter::from_fn(|| q.pop_due(Nanos::new(9)))
            .map(|e| e.seq)
            .collect();
        assert_eq!(due_at_nine, nines);
    }
}
