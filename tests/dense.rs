//! `DenseLimiter` is a store, not a second limiter: fed the same requests at the same
//! instants as the keyed `RateLimiter`, with the same idle-key sweeps, it must give the
//! same decisions and hold the same keys — for every built-in algorithm, with clocks
//! that jump forwards and back, costs above the capacity, resets and restored states.

use proptest::prelude::*;
use ratesim::{
    Algorithm, Clock, Composite, Decision, DenseLimiter, FakeClock, Gcra, LeakyBucket, Nanos,
    RateLimiter, Registry, Rule, SlidingWindowLog, TokenBucket,
};

/// One thing done to both stores.
#[derive(Debug, Clone)]
enum Op {
    /// The clock moves by `by` ns (backwards when `back`), then client `id` asks `cost`.
    Ask {
        by: u64,
        back: bool,
        id: u32,
        cost: u64,
    },
    /// Idle clients are evicted at the current instant.
    Sweep,
    /// Client `id` is forgotten.
    Reset { id: u32 },
    /// Client `id`'s state is replaced by client `from`'s (a fresh one if `from` holds
    /// none), as the simulator's synced deployment does on an exchange.
    Copy { id: u32, from: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u64..3_000_000_000, proptest::bool::weighted(0.1), 0u32..12, 0u64..6)
            .prop_map(|(by, back, id, cost)| Op::Ask { by, back, id, cost }),
        1 => Just(Op::Sweep),
        1 => (0u32..12).prop_map(|id| Op::Reset { id }),
        1 => (0u32..12, 0u32..12).prop_map(|(id, from)| Op::Copy { id, from }),
    ]
}

fn rules() -> Vec<Rule> {
    vec![
        Rule::new(3, Nanos::from_secs(1)).unwrap(),
        Rule::new(5, Nanos::from_secs(2))
            .unwrap()
            .with_burst(8)
            .unwrap(),
        Rule::new(1, Nanos::from_millis(700)).unwrap(),
    ]
}

/// Runs `ops` on both stores of `algorithm`'s states and compares every answer.
fn both_stores_agree<A: Algorithm>(make: impl Fn() -> A, ops: &[Op]) {
    let clock = FakeClock::new(Nanos::from_secs(5));
    let keyed: RateLimiter<A, u32, FakeClock> = RateLimiter::with_clock(make(), clock.clone());
    let mut dense = DenseLimiter::new(make());
    for (i, op) in ops.iter().enumerate() {
        let now = clock.now();
        match *op {
            Op::Ask { by, back, id, cost } => {
                let t = if back {
                    now.as_u64().saturating_sub(by)
                } else {
                    now.as_u64().saturating_add(by)
                };
                let t = Nanos::new(t);
                clock.set(t);
                let expected = keyed.try_acquire_n(&id, cost);
                let got = dense.try_acquire_n(id, cost, t);
                assert_eq!(got, expected, "op {i}: {op:?}");
                let peeked: Decision = keyed.peek(&id);
                assert_eq!(dense.peek(id, t), peeked, "op {i}: peek {id}");
                // The building block for other decisions sees the same state and instant.
                let probe = |algo: &A, state: &mut A::State, now: Nanos| {
                    (algo.would_pass(state, now, 1), algo.reset_after(state, now))
                };
                assert_eq!(
                    dense.with_state(id, t, probe),
                    keyed.with_state(&id, probe),
                    "op {i}: with_state {id}"
                );
            }
            Op::Sweep => {
                assert_eq!(dense.evict_idle(now), keyed.evict_idle(), "op {i}: evicted");
            }
            Op::Reset { id } => {
                keyed.reset(&id);
                dense.reset(id);
            }
            Op::Copy { id, from } => match keyed.snapshot(&from) {
                Some(state) => {
                    keyed.with_state(&id, |_, s, _| *s = state.clone());
                    dense.set_state(id, state);
                }
                None => {
                    keyed.reset(&id);
                    dense.reset(id);
                }
            },
        }
        assert_eq!(dense.len(), keyed.len(), "op {i}: clients held");
        assert_eq!(dense.is_empty(), keyed.is_empty());
        for id in 0..12 {
            assert_eq!(
                dense.state(id).is_some(),
                keyed.snapshot(&id).is_some(),
                "op {i}: does client {id} hold a state?"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_dense_store_decides_and_evicts_as_the_keyed_limiter_does(
        ops in proptest::collection::vec(op(), 1..200),
        rule in 0usize..3,
    ) {
        let rule = rules()[rule];
        let registry = Registry::builtin();
        for name in registry.names() {
            both_stores_agree(|| registry.create(name, rule).unwrap(), &ops);
        }
        // The concrete types too: the keyed limiter stores the buckets' and GCRA's
        // states packed (the boxed ones it does not), and the simulator's reference for
        // several limits is a composite of logs.
        both_stores_agree(|| TokenBucket::new(rule), &ops);
        both_stores_agree(|| LeakyBucket::new(rule), &ops);
        both_stores_agree(|| Gcra::new(rule), &ops);
        // The log owns memory: the dense store renews its evicted states for new
        // clients (`Algorithm::renew`), which the keyed limiter does not.
        both_stores_agree(|| SlidingWindowLog::new(rule), &ops);
        let logs = || {
            let parts = rules().into_iter().map(SlidingWindowLog::new).collect();
            Composite::new(parts).unwrap()
        };
        both_stores_agree(logs, &ops);
    }
}

#[test]
fn a_cost_above_the_capacity_is_refused_without_creating_the_client() {
    let mut dense = DenseLimiter::new(ratesim::TokenBucket::new(
        Rule::new(2, Nanos::from_secs(1)).unwrap(),
    ));
    let refused = dense.try_acquire_n(4, 3, Nanos::ZERO).unwrap_err();
    assert_eq!((refused.cost, refused.capacity), (3, 2));
    assert!(dense.is_empty());
    assert_eq!(dense.state(4), None);
}

#[test]
fn clients_leave_and_come_back_in_any_order() {
    // Removing from the middle of the held list must keep every other client findable.
    let rule = Rule::new(1, Nanos::from_secs(1)).unwrap();
    let mut dense = DenseLimiter::new(ratesim::FixedWindow::new(rule));
    for id in [9, 2, 5, 7] {
        assert!(dense.try_acquire_n(id, 1, Nanos::ZERO).unwrap().allowed);
    }
    dense.reset(2);
    dense.reset(2); // a second reset of a client holding nothing changes nothing
    dense.reset(1_000); // nor does one of a client never seen
    assert_eq!(dense.len(), 3);
    assert!(!dense.try_acquire_n(9, 1, Nanos::ZERO).unwrap().allowed);
    assert!(dense.try_acquire_n(2, 1, Nanos::ZERO).unwrap().allowed);
    assert_eq!(dense.len(), 4);
    assert_eq!(dense.evict_idle(Nanos::from_secs(1)), 4);
    assert!(dense.is_empty());
    assert!(
        dense
            .try_acquire_n(5, 1, Nanos::from_secs(1))
            .unwrap()
            .allowed
    );
    assert_eq!(dense.len(), 1);
    assert_eq!(dense.algorithm().name(), "fixed_window");
}

/// A sweep finds the clients holding a state from one bit per client number (see
/// `Slots::remove_where`): whether few or many numbers hold one, and across the 64-bit
/// words, it must evict exactly the idle clients and leave every other one counted
/// once.
#[test]
fn a_sweep_evicts_the_idle_clients_whether_few_or_many_slots_are_held() {
    let rule = Rule::new(2, Nanos::from_secs(1)).unwrap();
    // Dense: 60 of 60 slots held; sparse: 60 held among 5,901 slots.
    for step in [1u32, 100] {
        let mut dense = DenseLimiter::new(SlidingWindowLog::new(rule));
        let ids: Vec<u32> = (0..60).map(|i| i * step).collect();
        for &id in &ids {
            dense.try_acquire_n(id, 1, Nanos::ZERO).unwrap();
        }
        // Every third client asks again at 0.5 s: still in its window at 1.2 s.
        for &id in ids.iter().step_by(3) {
            dense.try_acquire_n(id, 1, Nanos::from_millis(500)).unwrap();
        }
        assert_eq!(
            dense.evict_idle(Nanos::from_millis(1_200)),
            40,
            "step {step}"
        );
        assert_eq!(dense.len(), 20, "step {step}");
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(
                dense.state(id).is_some(),
                i % 3 == 0,
                "step {step}, client {id}"
            );
        }
        // The survivors are counted once each: all evicted together later, none twice.
        assert_eq!(dense.evict_idle(Nanos::from_secs(2)), 20, "step {step}");
        assert!(dense.is_empty(), "step {step}");
    }
}

#[test]
fn a_new_client_given_an_evicted_log_starts_as_fresh_as_one_never_seen() {
    let rule = Rule::new(3, Nanos::from_secs(1)).unwrap();
    let mut reused = DenseLimiter::new(SlidingWindowLog::new(rule));
    for (i, id) in [0, 1, 0, 2, 0, 1].into_iter().enumerate() {
        reused
            .try_acquire_n(id, 1, Nanos::from_millis(i as u64))
            .unwrap();
    }
    assert_eq!(reused.evict_idle(Nanos::from_secs(2)), 3);
    let mut fresh = DenseLimiter::new(SlidingWindowLog::new(rule));
    // Three new clients take the three evicted states; each must start empty (a count
    // left from its old entries would deny its first requests).
    for id in [7, 8, 9] {
        for k in 0..4 {
            let t = Nanos::from_secs(2) + Nanos::from_millis(10 * k);
            let got = reused.try_acquire_n(id, 1, t).unwrap();
            assert_eq!(
                got,
                fresh.try_acquire_n(id, 1, t).unwrap(),
                "client {id}, {k}"
            );
            assert_eq!(got.allowed, k < 3, "client {id}, request {k}");
        }
        assert_eq!(reused.state(id), fresh.state(id), "client {id}'s state");
    }
}

#[test]
fn debug_output_names_the_store_its_algorithm_and_how_many_clients_it_holds() {
    let mut dense = DenseLimiter::new(Gcra::new(Rule::new(2, Nanos::from_secs(1)).unwrap()));
    for id in [0, 4] {
        dense.try_acquire_n(id, 1, Nanos::ZERO).unwrap();
    }
    let shown = format!("{dense:?}");
    assert!(shown.starts_with("DenseLimiter {"), "{shown}");
    assert!(shown.contains("Gcra"), "{shown}");
    assert!(shown.contains("len: 2"), "{shown}");
}
