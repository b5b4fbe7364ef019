//! One request attempt (a new arrival or a retry) and the limiter's answer to it: the
//! values the engine's concepts pass each other for every decision.
//!
//! Plain data; nothing here decides, orders or records an attempt.

use crate::sim::traffic::Arrival;
use crate::time::Nanos;

/// One request attempt: a new arrival, or a retry waiting in the `queue::EventQueue`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Event {
    pub(super) time: Nanos,
    pub(super) seq: u64,
    pub(super) key: u32,
    pub(super) cost: u64,
    pub(super) attempt: u32,
    /// When the request first arrived (for latency).
    pub(super) first: Nanos,
}

impl Event {
    /// The first attempt of the stream's arrival number `seq`.
    #[inline]
    pub(super) fn arrival(seq: u64, a: Arrival) -> Event {
        Event {
            time: a.time,
            seq,
            key: a.key,
            cost: a.cost,
            attempt: 0,
            first: a.time,
        }
    }
}

/// The limiter's answer to one request attempt.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answer {
    pub(super) allowed: bool,
    pub(super) remaining: u64,
    /// The advertised wait, zero when allowed; `None` when the request can never pass
    /// (its cost exceeds the capacity), as the algorithm's `retry_after` says it and as
    /// `decisions.csv` writes it. A request that fits may still be told `Nanos::MAX`:
    /// a real wait, past the end of the clock's range (a window of centuries).
    pub(super) retry_after: Option<Nanos>,
    /// How long a shaper held an admitted request back (`Outcome::Delayed`); zero for
    /// an immediate admission and for a denial.
    pub(super) delay: Nanos,
    /// A denial: which of the scenario's rules denied it (0 = the first `[[limit]]`;
    /// always 0 with one rule). `None` when admitted.
    pub(super) denied_by: Option<u32>,
    /// Under a `[deployment]`, the server that decided it; `None` otherwise.
    pub(super) node: Option<u32>,
}
