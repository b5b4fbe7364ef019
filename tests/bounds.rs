//! Each algorithm's stated worst case in one window, pinned to numbers worked out by
//! hand, without the simulator: the worst-case search (`tests/worst_case.rs`) checks
//! that the search reaches them, this file checks the formulas themselves on the edges
//! (windows of 1, 2, 3 ns, a burst apart from the rate, values at the end of `u64`).
//! The registry hands out the same functions, under the formula it prints.

use ratesim::{
    Algorithm, Builtin, FixedWindow, Gcra, LeakyBucket, Nanos, Registry, Rule,
    SlidingWindowCounter, SlidingWindowLog, TokenBucket,
};

fn rule(max: u64, window_ns: u64, burst: u64) -> Rule {
    Rule::new(max, Nanos::new(window_ns))
        .and_then(|r| r.with_burst(burst))
        .expect("valid rule")
}

/// `(N, W in ns, B)` and the expected bounds: buckets and GCRA, fixed window, sliding
/// window counter, sliding log.
const CASES: [((u64, u64, u64), [u64; 4]); 9] = [
    // Long windows: B + N − 1, 2N, 2N − 1, N.
    ((5, 10_000_000_000, 5), [9, 10, 9, 5]),
    ((5, 10_000_000_000, 8), [12, 10, 9, 5]),
    ((100, 1_000, 1), [100, 200, 199, 100]),
    // One instant: nothing straddles a boundary, nothing refills.
    ((5, 1, 5), [5, 5, 5, 5]),
    // Two and three instants: B + N − ⌈N/W⌉ capped at W·B, and 2N − ⌈2N/W⌉ floored at N.
    ((10, 2, 1), [2, 20, 10, 10]),
    ((5, 3, 5), [8, 10, 6, 5]),
    ((5, 4, 5), [8, 10, 7, 5]),
    ((6, 4, 2), [6, 12, 9, 6]),
    // At the end of u64 the bounds saturate instead of wrapping.
    ((u64::MAX, u64::MAX, u64::MAX), [u64::MAX; 4]),
];

#[test]
fn every_algorithm_states_its_worst_case_exactly_on_short_long_and_huge_windows() {
    for ((n, w, b), [bucket, fixed, counter, log]) in CASES {
        let r = rule(n, w, b);
        let context = format!("N = {n}, W = {w} ns, B = {b}");
        assert_eq!(
            TokenBucket::worst_case(&r),
            bucket,
            "token bucket, {context}"
        );
        assert_eq!(
            LeakyBucket::worst_case(&r),
            bucket,
            "leaky bucket, {context}"
        );
        assert_eq!(Gcra::worst_case(&r), bucket, "gcra, {context}");
        assert_eq!(
            FixedWindow::worst_case(&r),
            fixed,
            "fixed window, {context}"
        );
        assert_eq!(
            SlidingWindowCounter::worst_case(&r),
            counter,
            "sliding window counter, {context}"
        );
        assert_eq!(
            SlidingWindowLog::worst_case(&r),
            log,
            "sliding log, {context}"
        );
    }
}

#[test]
fn a_fixed_window_of_two_nanoseconds_already_admits_twice_the_limit() {
    assert_eq!(FixedWindow::worst_case(&rule(7, 2, 7)), 14);
    assert_eq!(FixedWindow::worst_case(&rule(7, 1, 7)), 7);
    assert_eq!(
        FixedWindow::worst_case(&rule(u64::MAX / 2 + 1, 60, 1)),
        u64::MAX
    );
}

#[test]
fn the_registry_gives_each_builtin_its_own_bound_formula_and_burst_use() {
    let registry = Registry::default();
    let expected = [
        ("token_bucket", Builtin::TokenBucket, "B + N - 1", true),
        ("leaky_bucket", Builtin::LeakyBucket, "B + N - 1", true),
        ("fixed_window", Builtin::FixedWindow, "2N", false),
        ("sliding_window_log", Builtin::SlidingWindowLog, "N", false),
        (
            "sliding_window_counter",
            Builtin::SlidingWindowCounter,
            "2N - 1",
            false,
        ),
        ("gcra", Builtin::Gcra, "B + N - 1", true),
    ];
    let builtins = || registry.entries().filter(|e| !e.is_preset());
    let names: Vec<&str> = builtins().map(|e| e.name()).collect();
    assert_eq!(names, expected.map(|(name, ..)| name), "display order");
    let r = rule(5, 10_000_000_000, 8);
    for (i, (name, builtin, formula, burst)) in expected.into_iter().enumerate() {
        let entry = registry.entry(name).expect("registered");
        assert_eq!(entry.name(), name);
        assert_eq!(entry.builtin(), Some(builtin), "{name}");
        assert_eq!(entry.worst_case_formula(), Some(formula), "{name}");
        assert_eq!(entry.uses_burst(), burst, "{name}");
        assert_eq!(registry.position(name), Some(i), "{name}");
        assert!(!entry.description().is_empty(), "{name}");
        assert_eq!(registry.description(name).ok(), Some(entry.description()));
        assert_eq!(entry.create(r).name(), name);
    }
    let bounds: Vec<Option<u64>> = builtins().map(|e| e.worst_case(&r)).collect();
    assert_eq!(bounds, [12, 12, 10, 5, 9, 12].map(Some));
}

#[test]
fn a_registered_algorithm_knows_nothing_of_its_bound_until_told() {
    let mut registry = Registry::default();
    registry.register("plain", "A fixed window under another name.", |r| {
        ratesim::BoxedAlgorithm::new(FixedWindow::new(r))
    });
    let entry = registry.entry("plain").expect("registered");
    assert_eq!(entry.worst_case_formula(), None);
    assert_eq!(entry.worst_case(&rule(5, 10, 5)), None);
    assert_eq!((entry.uses_burst(), entry.builtin()), (false, None));
    let last = registry.names().count() - 1;
    assert_eq!(
        registry.position("plain"),
        Some(last),
        "after the built-ins and presets"
    );
    assert_eq!(
        registry.description("plain").ok(),
        Some("A fixed window under another name.")
    );
}

#[test]
fn an_entry_in_a_debug_message_shows_its_name_and_bound() {
    let registry = Registry::default();
    let shown = format!("{:?}", registry.entry("gcra").expect("registered"));
    assert!(shown.starts_with("Entry"), "{shown}");
    for part in ["\"gcra\"", "\"B + N - 1\"", "uses_burst: true", "Gcra"] {
        assert!(shown.contains(part), "{part} in {shown}");
    }
}

#[test]
fn a_registry_in_a_debug_message_lists_its_names_in_display_order() {
    let registry = Registry::standard();
    let shown = format!("{registry:?}");
    let presets: Vec<String> = registry.resolve(&["presets"]).unwrap();
    let presets: String = presets.iter().map(|p| format!(", {p:?}")).collect();
    assert!(!presets.is_empty(), "the presets follow the built-ins");
    assert_eq!(
        shown,
        r#"["token_bucket", "leaky_bucket", "fixed_window", "sliding_window_log", "sliding_window_counter", "gcra""#
            .to_string()
            + &presets
            + "]"
    );
}
