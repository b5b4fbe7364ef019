//! The worst-case finder reaches every analytic bound exactly and never exceeds it.

use ratesim::sim::worst_case::{SearchOptions, search};
use ratesim::{Nanos, Registry, Rule};

/// The registry's bound for the built-in `name` under `rule`.
fn analytic_bound(name: &str, rule: &Rule) -> Option<u64> {
    Registry::builtin().entry(name).unwrap().worst_case(rule)
}

fn rules() -> Vec<Rule> {
    let r = |max, window: Nanos, burst| Rule::new(max, window).unwrap().with_burst(burst).unwrap();
    vec![
        r(100, Nanos::from_secs(60), 100),
        r(5, Nanos::from_secs(10), 5),
        r(3, Nanos::from_secs(10), 3),
        r(10, Nanos::from_millis(250), 4),
        r(7, Nanos::new(1_000_003), 12),
        r(1, Nanos::from_secs(1), 1),
        // Windows of a few nanoseconds: `(t − W, t]` holds only W instants.
        r(1, Nanos::new(1), 1),
        r(3, Nanos::new(1), 3),
        r(5, Nanos::new(2), 5),
        r(4, Nanos::new(3), 2),
        r(2, Nanos::new(2), 2),
    ]
}

#[test]
fn the_search_reaches_every_analytic_bound_exactly_and_never_exceeds_it() {
    for rule in rules() {
        for name in builtins() {
            let case = search(Registry::builtin(), name, rule, SearchOptions::default()).unwrap();
            let bound = analytic_bound(name, &rule).unwrap();
            assert_eq!(
                case.max_in_window, bound,
                "{name} under {rule}: found {} vs analytic {bound}",
                case.max_in_window
            );
        }
    }
}

/// Windows of 1 to 7 ns hold 1 to 7 instants: the bounds shrink (a 1 ns fixed window
/// cannot straddle a boundary, a bucket cannot refill a whole `N − 1`). The search
/// must reach the windows' exact bounds and stay within the buckets' upper bound.
#[test]
fn on_windows_of_a_few_nanoseconds_the_bounds_shrink_and_hold() {
    for w in 1..=7 {
        for n in [1, 2, 3, 5, 8] {
            for burst in [1, n, n + 3] {
                let rule = Rule::new(n, Nanos::new(w))
                    .unwrap()
                    .with_burst(burst)
                    .unwrap();
                for name in builtins() {
                    let found = search(Registry::builtin(), name, rule, SearchOptions::default())
                        .unwrap()
                        .max_in_window;
                    let bound = analytic_bound(name, &rule).unwrap();
                    let bucket = matches!(name, "token_bucket" | "leaky_bucket" | "gcra");
                    if bucket && w < 2 * n {
                        // An upper bound only: refill lost at a full bucket between
                        // instants is not counted.
                        assert!(found <= bound, "{name} under {rule}: {found} > {bound}");
                    } else {
                        assert_eq!(found, bound, "{name} under {rule}");
                    }
                }
            }
        }
    }
}

#[test]
fn random_search_alone_never_beats_the_bound() {
    // Many more random trials, other seeds: a bug that over-admits would show here.
    for rule in rules() {
        for name in builtins() {
            for seed in 2..5 {
                let case = search(
                    Registry::builtin(),
                    name,
                    rule,
                    SearchOptions { trials: 400, seed },
                )
                .unwrap();
                assert!(
                    case.max_in_window <= analytic_bound(name, &rule).unwrap(),
                    "{name} {rule} seed {seed}"
                );
            }
        }
    }
}

#[test]
fn the_winning_stream_replays_to_the_same_count() {
    use ratesim::sim::{self, NoopSink, RunOptions, Scenario};
    let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in ["fixed_window", "sliding_window_counter", "token_bucket"] {
        let case = search(Registry::builtin(), name, rule, SearchOptions::default()).unwrap();
        let trace = dir.path().join(format!("{name}.csv"));
        std::fs::write(&trace, sim::worst_case::trace_csv(&case)).unwrap();
        let text = sim::worst_case::replay_scenario(&case, &rule, &format!("{name}.csv"));
        let scenario = Scenario::parse(&text, &dir.path().join(format!("{name}.toml"))).unwrap();
        let report = sim::run(&scenario, &RunOptions::default(), &mut |_| {
            Ok(Box::new(NoopSink))
        })
        .unwrap();
        assert_eq!(
            report.algorithms[0].metrics.max_in_window, case.max_in_window,
            "{name}"
        );
        assert!(
            report.algorithms[1].metrics.max_in_window <= 5,
            "the log holds on the same stream"
        );
    }
}

#[test]
fn the_replay_scenario_writes_durations_as_people_write_them_and_reads_back_exactly() {
    use ratesim::sim::{Scenario, worst_case::replay_scenario};
    let case = search(
        Registry::builtin(),
        "fixed_window",
        rules()[1],
        SearchOptions::default(),
    )
    .unwrap();
    let end = case.stream.last().unwrap().0 + Nanos::new(1);
    let text = replay_scenario(&case, &rules()[1], "fixed_window.csv");
    assert!(text.contains("\nwindow = \"10s\"\n"), "{text}");
    assert!(
        text.contains(&format!("\nduration = \"{end}\"\n")),
        "{text}"
    );
    assert!(!text.contains("000000000ns"), "{text}");
    for rule in rules() {
        let case = search(Registry::builtin(), "gcra", rule, SearchOptions::default()).unwrap();
        let text = replay_scenario(&case, &rule, "gcra.csv");
        let scenario = Scenario::parse(&text, std::path::Path::new("gcra.toml"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(scenario.rule, rule, "{text}");
        assert_eq!(
            scenario.duration,
            case.stream.last().unwrap().0 + Nanos::new(1),
            "{text}"
        );
    }
}

#[test]
fn every_strict_setting_keeps_the_worst_case_within_the_limit() {
    use ratesim::sim::calibrate::strict_rule;
    for rule in rules() {
        for name in builtins() {
            let Some(strict) = strict_rule(Registry::builtin().entry(name).unwrap(), &rule) else {
                assert_eq!(
                    (name, rule.max_requests()),
                    ("fixed_window", 1),
                    "only a fixed window of 1 has no strict setting"
                );
                assert!(rule.window() >= Nanos::new(2), "a 1 ns window: {rule}");
                continue;
            };
            let found = search(Registry::builtin(), name, strict, SearchOptions::default())
                .unwrap()
                .max_in_window;
            assert!(
                found <= rule.max_requests(),
                "{name}: strict {strict} admits {found} > {}",
                rule.max_requests()
            );
            assert!(
                analytic_bound(name, &strict).unwrap() <= rule.max_requests(),
                "{name}: {strict}"
            );
            // And it is not needlessly strict: one more request per window would break
            // it (strict settings never go above the nominal limit).
            let looser = Rule::new(strict.max_requests() + 1, strict.window())
                .unwrap()
                .with_burst(strict.burst())
                .unwrap();
            assert!(
                analytic_bound(name, &looser).unwrap() > rule.max_requests()
                    || strict.max_requests() == rule.max_requests(),
                "{name}: {strict} could be looser"
            );
        }
    }
}

#[test]
fn calibrate_reports_nominal_poisson_and_verified_strict_numbers() {
    use ratesim::sim::calibrate::calibrate;
    let rule = Rule::new(10, Nanos::from_secs(1)).unwrap();
    for name in builtins() {
        let c = calibrate(Registry::builtin(), name, rule, SearchOptions::default()).unwrap();
        assert_eq!(Some(c.nominal_worst), c.nominal_analytic, "{name}");
        assert!(
            c.poisson_1x <= c.nominal_worst && c.poisson_2x <= c.nominal_worst,
            "{name}: {c:?}"
        );
        assert!(c.poisson_1x > 0, "{name}: Poisson traffic was admitted");
        assert!(c.strict_worst.is_some_and(|w| w <= 10), "{name}: {c:?}");
    }
}

/// A bucket whose burst is far below its rate still reaches `B + N − 1`: the greedy
/// tail after the burst must keep asking for the rate's `N − 1` requests, not only for
/// a few bursts' worth.
#[test]
fn the_search_reaches_the_bound_of_a_bucket_whose_burst_is_far_below_its_rate() {
    for burst in [1, 2, 10] {
        let rule = Rule::new(100, Nanos::from_secs(60))
            .unwrap()
            .with_burst(burst)
            .unwrap();
        for name in ["token_bucket", "leaky_bucket", "gcra"] {
            let case = search(Registry::builtin(), name, rule, SearchOptions::default()).unwrap();
            assert_eq!(case.max_in_window, burst + 99, "{name} under {rule}");
            assert_eq!(case.analytic, Some(burst + 99), "{name} under {rule}");
        }
    }
}

/// After its burst the adversary keeps asking, at each instant the algorithm says it
/// would pass, for two whole windows: the winning stream of a slow-refilling bucket
/// ends within one refill of two windows after it began.
#[test]
fn the_winning_stream_keeps_asking_for_two_windows_after_its_burst() {
    let window = Nanos::from_secs(60);
    let rule = Rule::new(100, window).unwrap().with_burst(1).unwrap();
    for name in ["token_bucket", "gcra"] {
        let case = search(Registry::builtin(), name, rule, SearchOptions::default()).unwrap();
        let (first, last) = (case.stream[0].0, case.stream.last().unwrap().0);
        let refill = Nanos::from_millis(600);
        assert!(
            last - first + refill >= window + window && last - first < window + window,
            "{name}: the stream runs from {first} to {last}"
        );
    }
}

/// A limit above [`MAX_SEARCHED_LIMIT`], in `max_requests` or in `burst`, is refused
/// with the limit named; the largest limit allowed is searched.
#[test]
fn a_limit_above_the_largest_searched_is_refused_and_the_largest_is_searched() {
    use ratesim::sim::worst_case::{MAX_SEARCHED_LIMIT, SearchError};
    let quick = SearchOptions { trials: 0, seed: 1 };
    let second = Nanos::from_secs(1);
    let over = Rule::new(MAX_SEARCHED_LIMIT + 1, second).unwrap();
    assert_eq!(
        search(Registry::builtin(), "fixed_window", over, quick),
        Err(SearchError::TooLarge(MAX_SEARCHED_LIMIT + 1))
    );
    let burst_over = Rule::new(5, second)
        .unwrap()
        .with_burst(MAX_SEARCHED_LIMIT + 7)
        .unwrap();
    assert_eq!(
        search(Registry::builtin(), "gcra", burst_over, quick),
        Err(SearchError::TooLarge(MAX_SEARCHED_LIMIT + 7))
    );
    let largest = Rule::new(MAX_SEARCHED_LIMIT, second).unwrap();
    let case = search(Registry::builtin(), "fixed_window", largest, quick).unwrap();
    assert_eq!(case.max_in_window, 2 * MAX_SEARCHED_LIMIT);
}

/// `over_admission` is the worst case as a multiple of the limit.
#[test]
fn over_admission_is_the_worst_case_over_the_limit() {
    let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
    for (name, expected) in [
        ("fixed_window", 2.0),
        ("sliding_window_counter", 1.8),
        ("sliding_window_log", 1.0),
    ] {
        let case = search(Registry::builtin(), name, rule, SearchOptions::default()).unwrap();
        assert_eq!(case.over_admission, expected, "{name}");
    }
}

/// A fixed window that refuses any request costing less than 2 (it never passes).
#[derive(Debug, Clone)]
struct PairsOnly(ratesim::FixedWindow);

impl ratesim::Algorithm for PairsOnly {
    type State = <ratesim::FixedWindow as ratesim::Algorithm>::State;

    fn name(&self) -> &str {
        "pairs_only"
    }
    fn rule(&self) -> &Rule {
        self.0.rule()
    }
    fn capacity(&self) -> u64 {
        self.0.capacity()
    }
    fn new_state(&self, now: Nanos) -> Self::State {
        self.0.new_state(now)
    }
    fn try_acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> bool {
        cost >= 2 && self.0.try_acquire(state, now, cost)
    }
    fn remaining(&self, state: &Self::State, now: Nanos) -> u64 {
        self.0.remaining(state, now)
    }
    fn retry_after(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<Nanos> {
        if cost < 2 {
            return None;
        }
        self.0.retry_after(state, now, cost)
    }
    fn reset_after(&self, state: &Self::State, now: Nanos) -> Nanos {
        self.0.reset_after(state, now)
    }
}

/// The systematic plans all send requests of cost 1, which this algorithm never
/// admits; the random trials' costlier requests find its worst case, a full window of
/// cost each side of a boundary, and the search reports the best plan, not the first.
#[test]
fn the_search_reports_its_best_plan_even_when_only_costlier_requests_pass() {
    use ratesim::sim::worst_case::search_with;
    let rule = Rule::new(6, Nanos::from_secs(10)).unwrap();
    let a = PairsOnly(ratesim::FixedWindow::new(rule));
    let case = search_with(&a, SearchOptions::default());
    assert_eq!(case.max_in_window, 12);
    assert!(
        case.stream.iter().all(|&(_, cost)| cost >= 2),
        "{:?}",
        case.stream
    );
}

/// A token bucket that writes down every request it is asked, `(instant, cost)`, and
/// counts those it denies.
struct Spy {
    inner: ratesim::TokenBucket,
    asked: std::sync::Mutex<Vec<(Nanos, u64)>>,
    denied: std::sync::atomic::AtomicU64,
}

impl ratesim::Algorithm for Spy {
    type State = <ratesim::TokenBucket as ratesim::Algorithm>::State;

    fn name(&self) -> &str {
        "spy"
    }
    fn rule(&self) -> &Rule {
        self.inner.rule()
    }
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    fn new_state(&self, now: Nanos) -> Self::State {
        self.inner.new_state(now)
    }
    fn try_acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> bool {
        self.asked.lock().unwrap().push((now, cost));
        let allowed = self.inner.try_acquire(state, now, cost);
        if !allowed {
            self.denied
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        allowed
    }
    fn remaining(&self, state: &Self::State, now: Nanos) -> u64 {
        self.inner.remaining(state, now)
    }
    fn retry_after(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<Nanos> {
        self.inner.retry_after(state, now, cost)
    }
    fn reset_after(&self, state: &Self::State, now: Nanos) -> Nanos {
        self.inner.reset_after(state, now)
    }
}

/// Every built-in reaches its bound from a burst right at a window boundary, so only
/// watching the requests shows how widely the search looks. The module's design: bursts
/// of the whole capacity at fixed phases before a boundary (among them half and a
/// quarter of a window), then random trials bursting just before the boundary, anywhere
/// in the window or just after the previous boundary, with costs above 1 too, and up to
/// more than the bucket holds.
#[test]
fn the_search_bursts_at_every_phase_it_promises() {
    use ratesim::sim::worst_case::search_with;
    let w = Nanos::from_secs(1).as_u64();
    // 7 per second: the greedy tail's instants (a permit every 1/7 s after a burst)
    // never fall on a half or a quarter of a window.
    let rule = Rule::new(7, Nanos::from_secs(1)).unwrap();
    let spy = Spy {
        inner: ratesim::TokenBucket::new(rule),
        asked: Default::default(),
        denied: Default::default(),
    };
    search_with(&spy, SearchOptions::default());
    // The greedy tail asks only when told a request would pass, and the systematic
    // bursts fit the bucket exactly: only a random burst of costlier requests, larger
    // than the bucket, is ever denied.
    assert!(
        spy.denied.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "no random burst asked for more than the bucket holds"
    );
    // A burst: two or more requests in a row at one instant with one cost. (Once the
    // bucket is empty, the greedy tail asks once per instant it is told to come back.)
    let asked = spy.asked.into_inner().unwrap();
    let bursts: Vec<(u64, u64)> = asked
        .windows(2)
        .filter(|pair| pair[0] == pair[1])
        .map(|pair| (pair[0].0.as_u64(), pair[0].1))
        .collect();
    let boundary = 4 * w;
    let burst_at = |t: u64| bursts.iter().any(|&(at, _)| at == t);
    for (phase, name) in [(w / 2, "half"), (w / 4, "a quarter of")] {
        assert!(
            burst_at(boundary - phase),
            "no burst {name} a window before the boundary: {bursts:?}"
        );
    }
    assert!(
        (2..=3).any(|phase| burst_at(boundary - phase)),
        "no random burst a few nanoseconds before the boundary: {bursts:?}"
    );
    let fixed = [1, 0, w / 2, w - 1, w / 4].map(|phase| boundary - phase);
    assert!(
        bursts
            .iter()
            .any(|&(t, _)| t > boundary - w + 3 && t < boundary - 3 && !fixed.contains(&t)),
        "no random burst inside the window: {bursts:?}"
    );
    assert!(
        bursts.iter().any(|&(_, cost)| cost > 1),
        "no random burst of a costlier request: {bursts:?}"
    );
}

/// The six built-ins (`all`): the bounds these tests check are theirs; the presets are
/// held to their real peers in `tests/presets_*.rs`.
fn builtins() -> Vec<&'static str> {
    let entries = Registry::builtin().entries();
    entries
        .filter(|e| !e.is_preset())
        .map(|e| e.name())
        .collect()
}
