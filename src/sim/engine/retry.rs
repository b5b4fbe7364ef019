//! Retry clients: a denied request comes back at `now + retry_after + U[0, jitter]`,
//! up to `max_retries` times, through the [`EventQueue`]; and what that costs them
//! (successes, give-ups, wasted retries, latency).
//!
//! The client only schedules and counts; the limiter decides each attempt. Open
//! clients have no retry client at all.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::attempt::Event;
use super::queue::EventQueue;
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
