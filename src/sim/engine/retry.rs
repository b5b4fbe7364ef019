//! Retry clients: a denied request comes back at `now + retry_after + U[0, jitter]`,
//! up to `max_retries` times, through the [`EventQueue`]; and what that costs them
//! (successes, give-ups, wasted retries, latency).
//!
//! The client only schedules and counts; the limiter decides each attempt. Open
//! clients have no retry client at all.
//!
//! The [`EventQueue`] orders the attempts: by time, same-instant attempts in the order
//! they were queued (an insertion counter, as in nexosim's queue), so a run is
//! deterministic by construction.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::attempt::Event;
use crate::sim::{ClientModel, LatencyHistogram, Metrics, Scenario};
use crate::time::Nanos;

/// The retry clients of one algorithm's run.
pub(super) struct RetryClient {
    max_retries: u32,
    jitter: Nanos,
    jitter_rng: ChaCha8Rng,
    /// Retries not yet due.
    queue: EventQueue,
    /// Retries at or after this instant would not happen in the run: `unfinished`.
    end: Nanos,
    succeeded: u64,
    gave_up: u64,
    unfinished: u64,
    wasted: u64,
    latency: LatencyHistogram,
}

impl RetryClient {
    /// The scenario's retry clients; `None` for open clients.
    pub(super) fn new(sc: &Scenario) -> Option<RetryClient> {
        let ClientModel::Retry {
            max_retries,
            jitter,
        } = sc.client
        else {
            return None;
        };
        // Stream 0 of the seed is the jitter's; traffic sources use streams 1, 2, ...
        let mut jitter_rng = ChaCha8Rng::seed_from_u64(sc.seed);
        jitter_rng.set_stream(0);
        Some(RetryClient {
            max_retries,
            jitter,
            jitter_rng,
            queue: EventQueue::default(),
            end: sc.duration,
            succeeded: 0,
            gave_up: 0,
            unfinished: 0,
            wasted: 0,
            latency: LatencyHistogram::default(),
        })
    }

    /// The earliest retry due at or before `time`, if any.
    #[inline]
    pub(super) fn pop_due(&mut self, time: Nanos) -> Option<Event> {
        self.queue.pop_due(time)
    }

    /// `event` was admitted at its time.
    #[inline]
    pub(super) fn admitted(&mut self, event: &Event) {
        self.succeeded += 1;
        self.latency.record(event.time - event.first);
    }

    /// `event` was denied with the advice to wait `retry_after`; `None` when the
    /// request can never pass (its cost exceeds the capacity): then it is not retried.
    #[inline]
    pub(super) fn denied(&mut self, event: &Event, retry_after: Option<Nanos>) {
        if event.attempt > 0 {
            self.wasted += 1;
        }
        let Some(retry_after) = retry_after else {
            return;
        };
        if event.attempt >= self.max_retries {
            self.gave_up += 1;
            return;
        }
        let extra = match self.jitter.as_u64() {
            0 => 0,
            j => self.jitter_rng.random_range(0..=j),
        };
        let at = event.time + retry_after + Nanos::new(extra);
        if at >= self.end {
            self.unfinished += 1;
        } else {
            self.queue.push(Event {
                time: at,
                attempt: event.attempt + 1,
                ..*event
            });
        }
    }

    /// Writes the clients' counts and latency quantiles into the run's metrics.
    pub(super) fn report(&self, m: &mut Metrics) {
        m.succeeded = Some(self.succeeded);
        m.gave_up = Some(self.gave_up);
        m.unfinished = Some(self.unfinished);
        m.wasted_retries = Some(self.wasted);
        m.latency_p50_ns = self.latency.quantile(0.5);
        m.latency_p99_ns = self.latency.quantile(0.99);
        m.latency_max_ns = self.latency.max();
    }
}

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
