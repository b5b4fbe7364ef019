//! The states in Redis (feature `redis`): every decision, probe and idle-key eviction is
//! a call of the Redis store's script at the fake clock's instant, so the same stream
//! gives the same decisions as in memory, which is how the simulator proves the
//! scripts right.
//!
//! A round trip per decision would make the run as slow as the socket. With open
//! clients on one server, clients are independent: the decisions of different clients
//! can be sent together, ahead of their turn, in one pipeline ([`Plan`]), and read back
//! in the stream's order. Three things would see a state decided too early, and a
//! batch stops short of each: a probe of a denied request (it peeks at the key's state
//! as that decision left it, so a key is in at most one decision sent and not yet
//! read), a request that can never fit (answered by a peek at its turn), and the
//! janitor's next sweep (it must find every state as the arrivals before it left it).
//! Everything else a run writes is computed at each arrival's turn, as in memory.

use std::sync::atomic::{AtomicU64, Ordering};

use super::probe::earliest_pass_by;
use super::record::{Answer, Event, Verdict};
use super::server::{KeyStates, rule_index};
use crate::redis::{RedisError, RedisLimiter};
use crate::rule::Decision;
use crate::sim::traffic::Arrival;
use crate::sim::{SimError, StoreFailure};
use crate::time::Nanos;

/// Tells apart the runs sharing one store prefix (an algorithm's first pass and its
/// silent second one start from fresh states, so they need their own keys).
static RUNS: AtomicU64 = AtomicU64::new(0);

/// The most decisions sent in one pipeline.
const BATCH: usize = 512;

/// The states in Redis, one algorithm's.
pub(super) struct Remote {
    limiter: RedisLimiter,
    /// This run's part of every client key, `"{run}:{key}"`.
    run: u64,
    /// By key id: the instant from which the key's state in Redis is idle, by its last
    /// decision's `reset_after` (`None`: no state there).
    idle_at: Vec<Option<Nanos>>,
    /// The keys that hold a state in Redis.
    live_keys: Vec<u32>,
    /// The latest decision's `remaining` and denying rule, for its row.
    last: (u64, Option<u32>),
    /// Each rule's capacity, in the scenario's order: a cost above one never fits.
    capacities: Vec<u64>,
    plan: Plan,
}

impl Remote {
    pub(super) fn new(limiter: RedisLimiter, capacities: Vec<u64>) -> Remote {
        Remote {
            limiter,
            run: RUNS.fetch_add(1, Ordering::Relaxed),
            idle_at: Vec::new(),
            live_keys: Vec::new(),
            last: (0, None),
            capacities,
            plan: Plan::default(),
        }
    }

    fn name(&self, key: u32) -> String {
        format!("{}:{key}", self.run)
    }

    /// `key` was decided at `at`: its state is idle from `at + reset_after` on (the time
    /// until it is back to its full quota, which is when it equals a fresh one).
    fn decided(&mut self, key: u32, at: Nanos, reset_after: Nanos) {
        let i = key as usize;
        if i >= self.idle_at.len() {
            self.idle_at.resize(i + 1, None);
        }
        if self.idle_at[i].is_none() {
            self.live_keys.push(key);
        }
        self.idle_at[i] = Some(at.saturating_add(reset_after));
    }

    /// Decides `calls` (key, cost, instant) in one round trip.
    fn decide(&self, calls: &[(u32, u64, Nanos)]) -> Result<Vec<Decided>, SimError> {
        let names: Vec<String> = calls.iter().map(|&(k, _, _)| self.name(k)).collect();
        let calls: Vec<(&str, u64, Nanos)> = (names.iter().zip(calls))
            .map(|(name, &(_, cost, at))| (name.as_str(), cost, at))
            .collect();
        self.limiter.decide_many(&calls).map_err(failed)
    }

    /// The decision of `event` at `at`: read from the plan, sent with a batch of the
    /// arrivals after it, or alone when it is not the plan's next arrival.
    fn decision(&mut self, event: &Event, at: Nanos) -> Result<Decided, SimError> {
        let Some(i) = self.plan.turn(event, at) else {
            let mut one = self.decide(&[(event.key, event.cost, at)])?;
            return Ok(one.remove(0));
        };
        if let Some(d) = self.plan.answers[i].take() {
            return Ok(d);
        }
        let capacity = self.limiter.capacity();
        let batch = self.plan.batch(i, capacity);
        let calls: Vec<(u32, u64, Nanos)> = batch.iter().map(|&j| self.plan.call(j)).collect();
        let mut answers = self.decide(&calls)?;
        for (&j, d) in batch.iter().zip(answers.drain(..)) {
            self.plan.answers[j] = Some(d);
        }
        Ok(self.plan.answers[i]
            .take()
            .expect("a batch holds its first arrival"))
    }
}

/// A decision and the rule that denied it.
type Decided = (Decision, Option<usize>);

/// The arrivals of the chunk being decided and the decisions made ahead of their turn.
#[derive(Default)]
struct Plan {
    /// `(seq, key, instant, cost)` of each arrival, in order.
    ahead: Vec<(u64, u32, Nanos, u64)>,
    /// The decision of each arrival sent in a batch and not yet asked for.
    answers: Vec<Option<Decided>>,
    /// The index in `ahead` of the next arrival to be asked.
    next: usize,
    /// The janitor's next sweep: no arrival at or after it is decided ahead.
    sweep: Nanos,
    /// Per key, the batch (numbered from 1) that last took it or saw it blocked.
    seen: Vec<u64>,
    batches: u64,
}

impl Plan {
    /// Starts a chunk.
    fn start(&mut self, arrivals: &[(u64, Arrival)]) {
        debug_assert!(
            self.answers.iter().all(Option::is_none),
            "a decision sent ahead was never asked for"
        );
        self.ahead.clear();
        (self.ahead).extend(
            arrivals
                .iter()
                .map(|&(seq, a)| (seq, a.key, a.time, a.cost)),
        );
        self.answers.clear();
        self.answers.resize(arrivals.len(), None);
        self.next = 0;
    }

    /// The index of `event` if it is the plan's next arrival, asked at its own instant.
    fn turn(&mut self, event: &Event, at: Nanos) -> Option<usize> {
        let i = self.next;
        let &(seq, key, time, _) = self.ahead.get(i)?;
        if event.attempt != 0 || seq != event.seq || key != event.key || time != at {
            debug_assert!(false, "an attempt out of the plan's order");
            return None;
        }
        self.next += 1;
        Some(i)
    }

    fn call(&self, i: usize) -> (u32, u64, Nanos) {
        let (_, key, at, cost) = self.ahead[i];
        (key, cost, at)
    }

    /// The arrivals to send in one pipeline with arrival `from` (not yet decided, its
    /// cost fits `capacity`): from it on, up to [`BATCH`] and before the next sweep, each
    /// arrival whose key is in no decision sent and not yet asked for, has no earlier
    /// arrival left out of this batch, and whose cost fits (a cost that never fits is
    /// answered at its turn by a peek, which must see the state its arrivals left).
    fn batch(&mut self, from: usize, capacity: u64) -> Vec<usize> {
        self.batches += 1;
        let stamp = self.batches;
        let mut taken = Vec::new();
        for j in from..self.ahead.len() {
            let (_, key, at, cost) = self.ahead[j];
            if taken.len() == BATCH || (j > from && at >= self.sweep) {
                break;
            }
            let k = key as usize;
            if k >= self.seen.len() {
                self.seen.resize(k + 1, 0);
            }
            let blocked = self.seen[k] == stamp;
            self.seen[k] = stamp;
            if blocked || self.answers[j].is_some() || cost > capacity {
                continue;
            }
            taken.push(j);
        }
        taken
    }
}

/// A store failure stops the run: a decision the store did not make is not one the
/// report may count.
fn failed(error: RedisError) -> SimError {
    SimError::Store(match error {
        RedisError::Unavailable { error, .. } => StoreFailure::Unavailable(error),
        RedisError::InsufficientCapacity(e) => StoreFailure::InsufficientCapacity(e),
    })
}

impl KeyStates for Remote {
    type Error = SimError;

    fn ask(&mut self, event: &Event, at: Nanos) -> Result<Verdict, SimError> {
        if event.cost > self.limiter.capacity() {
            // Refused before anything is sent, as in memory: no key is created,
            // `remaining` is read without consuming, and the row names the first rule
            // the cost can never fit (memory's longest wait: "never").
            self.plan.turn(event, at);
            let peeked = (self.limiter)
                .peek_n(&self.name(event.key), 0, at)
                .map_err(failed)?;
            let by = self.capacities.iter().position(|&c| event.cost > c);
            self.last = (peeked.remaining, by.map(rule_index));
            return Ok(Verdict::never_fits());
        }
        let (d, denied_by) = self.decision(event, at)?;
        self.decided(event.key, at, d.reset_after);
        self.last = (d.remaining, denied_by.map(rule_index));
        Ok(Verdict::fitting(d.allowed, d.retry_after))
    }

    fn answer(&self, _event: &Event, verdict: Verdict) -> Answer {
        let (remaining, denied_by) = self.last;
        Answer {
            allowed: verdict.allowed(),
            remaining,
            retry_after: verdict.retry_after(),
            delay: Nanos::ZERO,
            denied_by,
            node: None,
        }
    }

    fn upcoming(&mut self, arrivals: &[(u64, Arrival)]) {
        self.plan.start(arrivals);
    }

    fn sweep_at(&mut self, at: Nanos) {
        self.plan.sweep = at;
    }

    fn earliest(
        &mut self,
        key: u32,
        cost: u64,
        now: Nanos,
        hint: Nanos,
    ) -> Result<Option<Nanos>, SimError> {
        let name = self.name(key);
        let mut error = None;
        let passes = |t: u64| match self.limiter.peek_n(&name, cost, Nanos::new(t)) {
            Ok(d) => d.allowed,
            Err(e) => {
                error.get_or_insert(e);
                // Stop the search where it stands; the error is returned below.
                true
            }
        };
        let found = earliest_pass_by(passes, now, hint);
        match error {
            Some(e) => Err(failed(e)),
            None => Ok(found),
        }
    }

    fn len(&self) -> usize {
        self.live_keys.len()
    }

    /// Only the keys whose last decision says they are idle by `at` are sent; the script
    /// deletes each after checking it is (indistinguishable from fresh), and a key it
    /// finds otherwise stops the run: Redis and the decisions disagree.
    fn evict_idle(&mut self, at: Nanos) -> Result<(), SimError> {
        let idle_at = &self.idle_at;
        let (idle, busy): (Vec<u32>, Vec<u32>) = self
            .live_keys
            .iter()
            .partition(|&&k| idle_at[k as usize].is_some_and(|i| i <= at));
        if idle.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = idle.iter().map(|&k| self.name(k)).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let evicted = self.limiter.evict_idle(&refs, at).map_err(failed)?;
        if let Some(i) = evicted.iter().position(|gone| !gone) {
            return Err(SimError::Store(StoreFailure::NotIdle {
                key: names[i].clone(),
                at,
            }));
        }
        for key in idle {
            self.idle_at[key as usize] = None;
        }
        self.live_keys = busy;
        Ok(())
    }

    fn fresh_bytes(&self) -> Option<u64> {
        None
    }

    fn key_bytes_vary(&self) -> bool {
        false
    }

    fn key_bytes(&self, _key: u32) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{BATCH, Plan};
    use crate::rule::Decision;
    use crate::sim::traffic::Arrival;
    use crate::time::Nanos;

    /// A plan over arrivals `(key, instant in ns, cost)`, numbered from 0, with the
    /// next sweep at `sweep` ns.
    fn plan(arrivals: &[(u32, u64, u64)], sweep: u64) -> Plan {
        let arrivals: Vec<(u64, Arrival)> = (0u64..)
            .zip(arrivals)
            .map(|(seq, &(key, time, cost))| {
                let time = Nanos::new(time);
                (seq, Arrival { time, key, cost })
            })
            .collect();
        let mut plan = Plan::default();
        plan.start(&arrivals);
        plan.sweep = Nanos::new(sweep);
        plan
    }

    fn decided() -> Option<(Decision, Option<usize>)> {
        let d = Decision {
            allowed: true,
            remaining: 0,
            retry_after: Nanos::ZERO,
            reset_after: Nanos::ZERO,
        };
        Some((d, None))
    }

    #[test]
    fn a_batch_takes_each_client_once_and_none_of_its_later_arrivals() {
        // Key 1 again at 2 and 4: only its first arrival goes; 3 and 5 are others.
        let mut p = plan(
            &[
                (1, 0, 1),
                (2, 1, 1),
                (1, 2, 1),
                (3, 3, 1),
                (1, 4, 1),
                (4, 5, 1),
            ],
            99,
        );
        assert_eq!(p.batch(0, 10), [0, 1, 3, 5]);
        // The next batch, at key 1's second arrival, skips those already sent.
        p.answers[1] = decided();
        p.answers[3] = decided();
        p.answers[5] = decided();
        p.next = 2;
        assert_eq!(p.batch(2, 10), [2]);
    }

    #[test]
    fn a_client_with_a_decision_not_yet_asked_for_waits() {
        // Arrival 1 (key 2) was sent ahead; key 2's arrival 3 must not be sent before
        // arrival 1 is asked for (its probe peeks at the state arrival 1 left).
        let mut p = plan(&[(1, 0, 1), (2, 1, 1), (3, 2, 1), (2, 3, 1)], 99);
        p.answers[1] = decided();
        assert_eq!(p.batch(0, 10), [0, 2]);
    }

    #[test]
    fn a_cost_that_never_fits_is_left_out_with_its_clients_later_arrivals() {
        // Arrival 1 (key 2) costs more than the capacity: it is answered at its turn
        // by a peek, which must see key 2 as its earlier arrivals left it.
        let mut p = plan(&[(1, 0, 1), (2, 1, 11), (2, 2, 1), (3, 3, 1)], 99);
        assert_eq!(p.batch(0, 10), [0, 3]);
    }

    #[test]
    fn a_batch_ends_before_the_next_sweep() {
        let mut p = plan(&[(1, 0, 1), (2, 4, 1), (3, 5, 1), (4, 6, 1)], 5);
        assert_eq!(p.batch(0, 10), [0, 1]);
    }

    #[test]
    fn a_batch_holds_at_most_batch_arrivals() {
        let arrivals: Vec<(u32, u64, u64)> = (0..BATCH as u32 + 10).map(|k| (k, 0, 1)).collect();
        let mut p = plan(&arrivals, 99);
        assert_eq!(p.batch(0, 10), (0..BATCH).collect::<Vec<_>>());
    }

    #[test]
    fn a_batch_always_holds_its_first_arrival_and_a_cost_equal_to_the_capacity() {
        // Even at the sweep's instant (the janitor has swept by then, so this is only
        // a guard) and with a cost that uses the whole capacity.
        let mut p = plan(&[(1, 5, 10), (2, 5, 10)], 5);
        assert_eq!(p.batch(0, 10), [0]);
        let mut p = plan(&[(1, 0, 10), (2, 1, 10)], 99);
        assert_eq!(p.batch(0, 10), [0, 1]);
    }

    /// An attempt asked out of the plan's order is a bug in the driver (it calls
    /// `upcoming` only when every arrival is asked in order): debug builds stop there.
    fn out_of_order(seq: u64, time: u64) {
        use crate::sim::engine::record::Event;
        let mut p = plan(&[(1, 0, 1), (2, 1, 1)], 99);
        let key = 1;
        let event = Event::arrival(
            seq,
            Arrival {
                time: Nanos::new(time),
                key,
                cost: 1,
            },
        );
        p.turn(&event, Nanos::new(time));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "out of the plan's order")]
    fn an_arrival_with_another_number_is_out_of_order() {
        out_of_order(1, 0);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "out of the plan's order")]
    fn an_arrival_at_another_instant_is_out_of_order() {
        out_of_order(0, 7);
    }

    #[test]
    fn the_plan_hands_out_its_arrivals_in_order_and_only_those() {
        use crate::sim::engine::record::Event;
        let arrivals = [(1, 0, 1), (2, 1, 1)];
        let mut p = plan(&arrivals, 99);
        // The chunk's arrival `seq`, as the driver asks for it.
        let event = |seq: u64| {
            let (key, time, cost) = arrivals[seq as usize];
            let time = Nanos::new(time);
            Event::arrival(seq, Arrival { time, key, cost })
        };
        let (first, second) = (event(0), event(1));
        assert_eq!(p.turn(&first, Nanos::new(0)), Some(0));
        assert_eq!(p.turn(&second, Nanos::new(1)), Some(1));
        assert_eq!(p.turn(&second, Nanos::new(1)), None, "past the chunk's end");
    }
}
