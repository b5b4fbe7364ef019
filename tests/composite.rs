//! Which rule of a composite limit binds: the one that keeps a request waiting longest,
//! a rule the request can never pass before any finite wait, the first of equals.

use ratesim::{Algorithm, BoxedAlgorithm, Composite, Nanos, Registry, Rule};

fn part(name: &str, max: u64, window_secs: u64) -> BoxedAlgorithm {
    let rule = Rule::new(max, Nanos::from_secs(window_secs)).expect("valid rule");
    Registry::default().create(name, rule).expect("built-in")
}

/// The binding rule for a request of `cost` at 2 s, after one admission at 1 s.
fn binding_after_one_admission(parts: Vec<BoxedAlgorithm>, cost: u64) -> Option<usize> {
    let composite = Composite::new(parts).expect("at least one rule");
    let mut state = composite.new_state(Nanos::ZERO);
    assert!(composite.try_acquire(&mut state, Nanos::from_secs(1), 1));
    composite.binding_rule(&state, Nanos::from_secs(2), cost)
}

#[test]
fn the_binding_rule_is_the_one_that_keeps_a_request_waiting_longest() {
    // After 1 s: the bucket refills its token at 11 s, the fixed window reopens at 100 s.
    let bucket = || part("token_bucket", 1, 10);
    let day = || part("fixed_window", 1, 100);
    assert_eq!(
        binding_after_one_admission(vec![bucket(), day()], 1),
        Some(1)
    );
    assert_eq!(
        binding_after_one_admission(vec![day(), bucket()], 1),
        Some(0)
    );
    assert_eq!(
        binding_after_one_admission(vec![bucket(), day(), bucket()], 1),
        Some(1)
    );
}

#[test]
fn of_rules_that_keep_it_waiting_equally_long_the_first_binds() {
    let day = || part("fixed_window", 1, 100);
    assert_eq!(binding_after_one_admission(vec![day(), day()], 1), Some(0));
    // The log's entry from 1 s expires at 101 s, a second later than the window reopens.
    let log = || part("sliding_window_log", 1, 100);
    assert_eq!(
        binding_after_one_admission(vec![day(), log(), log()], 1),
        Some(1)
    );
}

#[test]
fn a_rule_the_request_can_never_pass_binds_before_any_wait_and_none_binds_when_it_passes() {
    let small = || part("token_bucket", 2, 10);
    let day = || part("fixed_window", 5, 100);
    // Cost 3 never fits a burst of 2; the fixed window would only make it wait.
    assert_eq!(
        binding_after_one_admission(vec![day(), small()], 3),
        Some(1)
    );
    assert_eq!(
        binding_after_one_admission(vec![small(), day()], 3),
        Some(0)
    );
    assert_eq!(binding_after_one_admission(vec![small(), day()], 1), None);
}

#[test]
fn a_composite_keeps_its_parts_in_the_order_given() {
    let composite =
        Composite::new(vec![part("gcra", 5, 1), part("fixed_window", 100, 60)]).expect("rules");
    let names: Vec<&str> = composite.parts().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["gcra", "fixed_window"]);
    assert_eq!(composite.name(), "composite");
    let same = Composite::new(vec![part("gcra", 5, 1), part("gcra", 100, 60)]).expect("rules");
    assert_eq!(
        same.name(),
        "gcra",
        "several rules of one algorithm keep its name"
    );
}
