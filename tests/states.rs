//! What the per-key states and a boxed algorithm let a caller see: the instant a bucket
//! was last brought up to date, the size of a sliding log, and what a debug message
//! shows. Used for memory accounting and debugging; the decisions themselves are the
//! conformance suite's.

use ratesim::{
    Algorithm, BoxedAlgorithm, Gcra, LeakyBucket, Nanos, Rule, SlidingWindowLog, TokenBucket,
};

fn rule() -> Rule {
    Rule::new(2, Nanos::from_secs(1)).expect("valid rule")
}

#[test]
fn a_bucket_state_remembers_the_latest_instant_even_when_the_clock_goes_back() {
    let bucket = TokenBucket::new(rule());
    let mut state = bucket.new_state(Nanos::from_secs(3));
    assert_eq!(state.last(), Nanos::from_secs(3));
    assert!(bucket.try_acquire(&mut state, Nanos::from_secs(5), 1));
    assert_eq!(state.last(), Nanos::from_secs(5));
    bucket.try_acquire(&mut state, Nanos::from_secs(4), 1);
    assert_eq!(
        state.last(),
        Nanos::from_secs(5),
        "a backwards clock is the latest"
    );

    let leaky = LeakyBucket::new(rule());
    let mut state = leaky.new_state(Nanos::new(7));
    assert!(
        !leaky.try_acquire(&mut state, Nanos::new(9), 3),
        "3 never fits in 2"
    );
    assert_eq!(
        state.last(),
        Nanos::new(9),
        "a denial still brings it up to date"
    );
}

#[test]
fn a_sliding_log_holds_one_entry_per_admission_instant_until_it_expires() {
    let log = SlidingWindowLog::new(rule());
    let mut state = log.new_state(Nanos::ZERO);
    assert!(state.is_empty());
    assert_eq!(state.len(), 0);
    assert!(log.try_acquire(&mut state, Nanos::new(10), 1));
    assert!(log.try_acquire(&mut state, Nanos::new(10), 1));
    assert_eq!(
        state.len(),
        1,
        "two admissions at one instant share an entry"
    );
    assert!(!log.try_acquire(&mut state, Nanos::new(20), 1));
    assert_eq!(state.len(), 1, "a denial logs nothing");
    assert!(log.try_acquire(&mut state, Nanos::from_secs(1) + Nanos::new(10), 1));
    assert_eq!(
        state.len(),
        1,
        "the first entry expired as the new one came in"
    );
    assert!(!state.is_empty());
}

#[test]
fn a_boxed_algorithm_and_its_state_say_what_they_are_in_a_debug_message() {
    let rule = Rule::new(5, Nanos::from_secs(10))
        .and_then(|r| r.with_burst(8))
        .expect("valid rule");
    let gcra = BoxedAlgorithm::new(Gcra::new(rule));
    assert_eq!(format!("{gcra:?}"), format!("gcra({rule})"));
    assert_eq!(format!("{gcra:?}"), "gcra(5/10s (burst 8))");
    let state = gcra.new_state(Nanos::ZERO);
    assert_eq!(
        format!("{state:?}"),
        "ErasedState",
        "a boxed state hides its type"
    );
}
