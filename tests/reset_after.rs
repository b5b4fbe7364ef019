//! `reset_after` is exact for every algorithm and preset: after that wait the quota is full again,
//! one nanosecond earlier it is not, on states reached by a few admissions spread over
//! two windows (so the sliding counter's previous window still weighs when its current
//! one is empty).

use ratesim::{Algorithm, Nanos, Registry, Rule};

#[test]
fn after_reset_after_the_quota_is_full_again_and_one_nanosecond_earlier_it_is_not() {
    let registry = Registry::standard();
    let rule = Rule::new(10, Nanos::from_secs(10)).expect("valid rule");
    // (admission instants in seconds, probe instants in seconds)
    let histories: [(&[u64], &[u64]); 3] = [
        (&[1, 1, 1, 1, 1], &[1, 5, 12, 19, 25]),
        (&[3, 14], &[14, 15, 21, 30]),
        (&[9, 9, 9], &[9, 10, 11, 18, 19, 29]),
    ];
    for name in registry.names() {
        let algorithm = registry.create(name, rule).expect("built-in");
        let capacity = algorithm.capacity();
        // A preset may refuse part of a history (nginx's default burst is 0): the
        // property holds for whatever state it reached; a built-in admits all of it.
        let preset = registry.entry(name).expect("registered").is_preset();
        for (admissions, probes) in histories {
            let mut state = algorithm.new_state(Nanos::ZERO);
            for &t in admissions {
                let admitted = algorithm.try_acquire(&mut state, Nanos::from_secs(t), 1);
                assert!(admitted || preset, "{name} refused at {t} s");
            }
            for &p in probes {
                let now = Nanos::from_secs(p);
                let wait = algorithm.reset_after(&state, now);
                let ctx = format!("{name}, admitted at {admissions:?} s, at {p} s");
                assert_eq!(
                    algorithm.remaining(&state, now + wait),
                    capacity,
                    "{ctx}: not full after reset_after = {wait}"
                );
                if wait > Nanos::ZERO {
                    let before = now + wait - Nanos::new(1);
                    assert!(
                        algorithm.remaining(&state, before) < capacity,
                        "{ctx}: already full 1 ns before reset_after = {wait}"
                    );
                } else {
                    assert_eq!(algorithm.remaining(&state, now), capacity, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn an_empty_sliding_counter_window_still_waits_for_the_previous_one_to_stop_weighing() {
    let registry = Registry::standard();
    let rule = Rule::new(10, Nanos::from_secs(10)).expect("valid rule");
    let counter = registry
        .create("sliding_window_counter", rule)
        .expect("built-in");
    let mut state = counter.new_state(Nanos::ZERO);
    for _ in 0..5 {
        assert!(counter.try_acquire(&mut state, Nanos::from_secs(1), 1));
    }
    // At 12 s the current window is empty and the previous one weighs 5 × 8/10 = 4.
    let now = Nanos::from_secs(12);
    assert_eq!(counter.remaining(&state, now), 6);
    assert_eq!(counter.reset_after(&state, now), Nanos::from_secs(8));
}
