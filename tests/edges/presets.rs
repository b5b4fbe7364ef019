//! The presets (docs/presets.md) and the delayed outcome, each peer's quirk at the
//! input where it and the textbook (or a nearby rounding) decide differently. Refusals
//! go through a scenario and its decisions; delays, which no decision row carries, go
//! through the public `Algorithm::acquire`, and where they are counted through a run's
//! `max_in_window`.

use std::collections::BTreeMap;
use std::path::Path;

use ratesim::presets::{Nginx, NginxParams, Tower};
use ratesim::sim::Scenario;
use ratesim::{Algorithm, Nanos, Outcome, Rule};

use crate::{S, replay};

const MS: u64 = 1_000_000;

/// Each key's decisions (allowed or not, in order) when `algorithm` decides `rows`
/// (`(ns, key, cost)`, any order: replayed sorted by time, ties in the order given)
/// under `body` (`[limit]` and any `[preset.*]`, as TOML lines).
fn decide(algorithm: &str, rows: &[(u64, &str, u64)], body: &str) -> BTreeMap<String, Vec<bool>> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| r.0);
    let (_, decisions) = replay(&rows, "1h", &[algorithm], body);
    let mut by_key: BTreeMap<String, Vec<bool>> = BTreeMap::new();
    for row in &decisions[0] {
        by_key.entry(row.key.clone()).or_default().push(row.allowed);
    }
    by_key
}

/// One key's decisions: `times` (ns) each of cost 1.
fn one_key(algorithm: &str, times: &[u64], body: &str) -> Vec<bool> {
    let rows: Vec<(u64, &str, u64)> = times.iter().map(|&t| (t, "c", 1)).collect();
    decide(algorithm, &rows, body).remove("c").unwrap()
}

/// nginx decides on its millisecond clock, `floor(t / 1 ms)`. At 1r/s, burst 0: key
/// `a` at 0.999999 ms (ms 0) and 1 s is 1000 ms apart, so its second request passes;
/// rounding to the nearest or up (ms 1), or leaking in nanoseconds (999.000001 ms),
/// leaves 1 thousandth of excess and refuses it. Key `b` at 0.4 ms and 999.6 ms is 999
/// ms apart, refused, where rounding (ms 0, ms 1000) would admit it; its third, at
/// 1 s, then passes (after an admission at ms 1000 it would not).
#[test]
fn nginx_reads_the_time_in_whole_milliseconds_rounded_down() {
    let got = decide(
        "nginx",
        &[
            (999_999, "a", 1),
            (S, "a", 1),
            (400_000, "b", 1),
            (999_600_000, "b", 1),
            (S, "b", 1),
        ],
        "[limit]\nmax_requests = 1\nwindow = \"1s\"\n",
    );
    assert_eq!(got["a"], [true, true], "a: ms 0, then ms 1000");
    assert_eq!(got["b"], [true, false, true], "b: ms 0, ms 999, ms 1000");
}

/// nginx leaks `rate·ms / 1000` thousandths, truncated, at every admission, and an
/// admission moves `last`; a refusal changes nothing. At 30r/m (500 thousandths a
/// second), burst 2, nodelay: admissions at 0, 1 and 2 ms each leak 0 (0.5 cut), so
/// the excess is 2000, not 1999, and the next request needs a leak of 1000: 2000 ms
/// after ms 2, at 2002 ms. Rules out the exact leak (passes at 2000 ms), the leak
/// rounded up (excess 1998: passes at 1997 ms), and a refusal that moves `last`
/// (refused again at 2002 ms).
#[test]
fn nginx_truncates_the_leak_at_every_admission_and_a_refusal_changes_nothing() {
    let limit = "[limit]\nmax_requests = 30\nwindow = \"60s\"\n\
                 [preset.nginx]\nburst = 2\nnodelay = true\n";
    let times = [0, MS, 2 * MS, 1997 * MS, 2000 * MS, 2001 * MS, 2002 * MS];
    assert_eq!(
        one_key("nginx", &times, limit),
        [true, true, true, false, false, false, true],
        "at 0, 1, 2, 1997, 2000, 2001, 2002 ms"
    );
}

/// A rule `N per W`, the instants of one key's requests (ns), its decisions, and what
/// the run's note names (`None`: no note).
type Rate = (
    u64,
    &'static str,
    &'static [u64],
    &'static [bool],
    Option<&'static str>,
);

/// The rate as nginx's parser stores it, `floor(1000·X / 60)` thousandths a second for
/// `X r/m`, and a rule it cannot write as the nearest whole `r/m`, at least `1r/m`. With
/// burst 0 a key's second request passes once `rate·ms / 1000 ≥ 1000`:
/// - 1 per 60 s is `1r/m`, 16 thousandths: at 62.5 s, not 60 s (exact 16.67) nor
///   58.824 s (rounded to 17);
/// - 1 per 7 s (8.57 r/m) is `9r/m`, 150: at 6.667 s, where `8r/m` (floored) and the
///   exact 1 per 7 s still refuse;
/// - 5 per 13 s (23.08 r/m) is `23r/m`, 383: at 2.611 s, where `24r/m` (rounded up)
///   passes at 2.5 s and the exact rule at 2.6 s;
/// - 1 per hour rounds to `0r/m`, raised to `1r/m`: at 62.5 s again (a rate of 0,
///   floored to 1 thousandth, would wait 1000 s).
///
/// Each rounded rule says so in the run's notes, naming the `rate=` it used.
#[test]
fn nginx_stores_a_rate_as_its_parser_does_and_writes_an_odd_rule_as_the_nearest_r_per_m() {
    let cases: [Rate; 4] = [
        (
            1,
            "60s",
            &[0, 58_824 * MS, 60 * S, 62_499 * MS, 62_500 * MS],
            &[true, false, false, false, true],
            None,
        ),
        (
            1,
            "7s",
            &[0, 6_666 * MS, 6_667 * MS],
            &[true, false, true],
            Some("rate=9r/m"),
        ),
        (
            5,
            "13s",
            &[0, 2_500 * MS, 2_600 * MS, 2_610 * MS, 2_611 * MS],
            &[true, false, false, false, true],
            Some("rate=23r/m"),
        ),
        (
            1,
            "1h",
            &[0, 62_499 * MS, 62_500 * MS],
            &[true, false, true],
            Some("rate=1r/m"),
        ),
    ];
    for (n, window, times, expected, note) in cases {
        let limit = format!("[limit]\nmax_requests = {n}\nwindow = \"{window}\"\n");
        let got = one_key("nginx", times, &limit);
        assert_eq!(got, expected, "{n} per {window} at {times:?} ns");
        let text = format!(
            "name = \"n\"\nduration = \"1h\"\nalgorithms = [\"nginx\"]\n{limit}\
             [[traffic]]\nkind = \"uniform\"\nrate = 1\n"
        );
        let scenario = Scenario::parse(&text, Path::new("n.toml")).unwrap();
        let notes = scenario.preset_notes();
        match note {
            None => assert!(notes.is_empty(), "{n} per {window}: {notes:?}"),
            Some(rate) => {
                assert_eq!(notes.len(), 1, "{n} per {window}: {notes:?}");
                assert!(notes[0].contains(rate), "{n} per {window}: {}", notes[0]);
            }
        }
    }
}

/// Without `nodelay` an admitted request waits `excess·1000 / rate` ms, truncated, on
/// nginx's millisecond timer: from the millisecond it arrived in, not from its instant.
/// At 3r/s, burst 2, requests at 0.25 ms: the second's excess 1000 waits 333 ms (the
/// timer fires at ms 333: 332.75 ms after it arrived), the third's 2000 waits 666 ms
/// (665.75 ms); the fourth is refused. Rules out the wait rounded up (334, 667) or to
/// nearest (667), exact (333.33…), and counted from the arrival (333 ms, 666 ms).
#[test]
fn nginx_delays_are_truncated_to_whole_milliseconds_on_its_timer() {
    let rule = Rule::new(3, Nanos::from_secs(1)).unwrap();
    let params = NginxParams {
        burst: 2,
        ..NginxParams::default()
    };
    let nginx = Nginx::new(rule, params);
    let mut state = nginx.new_state(Nanos::ZERO);
    let at = Nanos::new(250_000);
    let got: Vec<Outcome> = (0..4).map(|_| nginx.acquire(&mut state, at, 1)).collect();
    assert_eq!(
        got,
        [
            Outcome::Allowed,
            Outcome::Delayed(Nanos::new(332_750_000)),
            Outcome::Delayed(Nanos::new(665_750_000)),
            Outcome::Denied,
        ]
    );
}

/// governor's emission interval is `⌊W / N⌋` ns and its tolerance that interval times
/// `B − 1`. At 3 per 2 s, burst 3: T = 666,666,666 ns, τ = 1,333,333,332 ns, so after
/// three at 0 the fourth passes at `3T − τ` = 666,666,666 ns and not a nanosecond
/// before. Rules out the exact interval (ratesim's `gcra`: 666,666,667), T rounded to
/// nearest or up (666,666,667), and τ floored from `W·(B − 1) / N` (1,333,333,333: it
/// would pass at 666,666,665).
#[test]
fn governor_floors_its_interval_and_builds_its_tolerance_from_the_floored_interval() {
    let times = [0, 0, 0, 666_666_665, 666_666_666];
    let limit = "[limit]\nmax_requests = 3\nwindow = \"2s\"\nburst = 3\n";
    assert_eq!(
        one_key("governor", &times, limit),
        [true, true, true, false, true]
    );
    let gcra = one_key("gcra", &times, limit);
    assert_eq!(
        gcra,
        [true, true, true, false, false],
        "the exact GCRA waits for 666,666,666.67 ns"
    );
}

/// `limits`' fixed window starts at the key's first hit and ends exactly `W` later
/// (`now ≥ expiry` resets it), and every hit is counted, refused ones too. 3 per 10 s:
/// a hit at 5 s opens [5 s, 15 s); a refused cost 3 at 6 s still counts, so a cost 1 at
/// 7 s is refused; 10 s is no boundary; 15 s is. Rules out uncounted refusals (7 s
/// passes), windows on the epoch's grid (10 s passes), and an expiry that needs
/// `now > expiry` (15 s refused).
#[test]
fn limits_fixed_window_opens_at_the_first_hit_and_counts_refused_hits() {
    let rows = [
        (5 * S, "c", 1),
        (6 * S, "c", 3),
        (7 * S, "c", 1),
        (10 * S, "c", 1),
        (15 * S - 1, "c", 1),
        (15 * S, "c", 1),
        (15 * S, "c", 2),
        (15 * S, "c", 1),
    ];
    let got = decide(
        "limits_fixed_window",
        &rows,
        "[limit]\nmax_requests = 3\nwindow = \"10s\"\n",
    );
    assert_eq!(
        got["c"],
        [true, false, false, false, false, true, true, false]
    );
}

/// A cost of 0 always passes and changes nothing, in `limits`' fixed window too, where
/// `limits` itself would open a window on it (ratesim's rule for every algorithm). 3 per
/// 10 s: a cost 0 at 4 s, then three hits at 5 s open [5 s, 15 s), so a hit at 14 s is
/// refused. Rules out the window opened by the cost 0 ([4 s, 14 s): 14 s passes).
#[test]
fn a_cost_of_zero_opens_no_limits_fixed_window() {
    let rows = [
        (4 * S, "c", 0),
        (5 * S, "c", 1),
        (5 * S, "c", 1),
        (5 * S, "c", 1),
        (14 * S, "c", 1),
    ];
    let got = decide(
        "limits_fixed_window",
        &rows,
        "[limit]\nmax_requests = 3\nwindow = \"10s\"\n",
    );
    assert_eq!(got["c"], [true, true, true, true, false]);
}

/// `limits`' moving window counts the closed interval `[t − W, t]`. 2 per 10 s, hits
/// at 0 and 1 s: at 10 s the hit at 0 still counts (refused), 1 ns later it does not;
/// at 11 s the hit at 1 s still counts. Rules out the textbook's `(t − W, t]`, which
/// admits at 10 s.
#[test]
fn limits_moving_window_counts_a_hit_until_a_nanosecond_after_w() {
    let times = [0, S, 10 * S, 10 * S + 1, 11 * S, 11 * S + 1];
    let limit = "[limit]\nmax_requests = 2\nwindow = \"10s\"\n";
    assert_eq!(
        one_key("limits_moving_window", &times, limit),
        [true, true, false, true, false, true]
    );
    assert_eq!(
        one_key("sliding_window_log", &times[..3], limit),
        [true, true, true],
        "the textbook log admits at exactly 10 s"
    );
}

/// `limits`' counter admits when `⌊prev·(W − t mod W)/W + cur⌋ + cost ≤ N`, and before
/// its first window ends (`0 < t < W`) counts the current window twice. 2 per 10 s:
/// two hits at 10 s, then at 21 s the estimate is 1.8 (floored 1: passes; unfloored,
/// rounded or rounded up it would be refused), then 2.8; at 25 s exactly 2, at 26 s
/// 1.8 again. 3 per 10 s: key `b` at 1, 2, 3 s estimates 0, 1.8, 3.4 (the third
/// refused; 2 without the double count), key `c`'s three hits at exactly 0 are not
/// double-counted (Python's `int(-1)` is −1: no same window) and all pass.
#[test]
fn limits_sliding_window_counter_floors_its_estimate_and_double_counts_its_first_window() {
    let times = [10 * S, 10 * S, 10 * S, 21 * S, 21 * S, 25 * S, 26 * S];
    let two = "[limit]\nmax_requests = 2\nwindow = \"10s\"\n";
    assert_eq!(
        one_key("limits_sliding_window_counter", &times, two),
        [true, true, false, true, false, false, true]
    );
    let rows = [
        (0, "c", 1),
        (0, "c", 1),
        (0, "c", 1),
        (S, "b", 1),
        (2 * S, "b", 1),
        (3 * S, "b", 1),
    ];
    let three = "[limit]\nmax_requests = 3\nwindow = \"10s\"\n";
    let got = decide("limits_sliding_window_counter", &rows, three);
    assert_eq!(got["b"], [true, true, false], "b at 1, 2, 3 s");
    assert_eq!(got["c"], [true, true, true], "c at 0");
}

/// envoyproxy/ratelimit's windows are aligned to the epoch (`now / unit · unit`), and
/// hits are added before the comparison, so a refused request counts. 3 per second: 2
/// at 0.9 s pass, 2 more at 0.95 s are refused and counted (4), so 1 at 0.96 s is
/// refused too (5); at 1 s a new window holds 3, and at 1.5 s the window is full. Rules
/// out uncounted refusals (0.96 s passes) and a window opened by the first hit
/// ([0.9 s, 1.9 s): 1 s refused). Each refusal's wait is to the next whole second
/// (50, 40 and 500 ms), where a window opened by the first hit would say 1.9 s.
#[test]
fn envoy_aligns_its_windows_to_the_epoch_and_counts_refused_requests() {
    let rows = [
        (900 * MS, "c", 2),
        (950 * MS, "c", 2),
        (960 * MS, "c", 1),
        (S, "c", 3),
        (1_500 * MS, "c", 1),
        (2 * S, "c", 1),
    ];
    let got = decide(
        "envoy",
        &rows,
        "[limit]\nmax_requests = 3\nwindow = \"1s\"\n",
    );
    assert_eq!(got["c"], [true, false, false, true, false, true]);
    let limit = "[limit]\nmax_requests = 3\nwindow = \"1s\"\n";
    let (_, decisions) = replay(&rows, "1h", &["envoy"], limit);
    let waits: Vec<Option<Nanos>> = decisions[0]
        .iter()
        .filter(|r| !r.allowed)
        .map(|r| r.retry_after)
        .collect();
    let ms = |v: u64| Some(Nanos::new(v * MS));
    assert_eq!(waits, [ms(50), ms(40), ms(500)]);
}

/// tower's window opens at the first call after the previous one ended, and a waiting
/// caller passes on tokio's millisecond timer, `ceil_ms(until)`, in arrival order. 2
/// per 100.25 ms: calls at 550 and 560 ms open [550, 650.25) and close it; one at 610
/// ms waits until 651 ms (41 ms) and opens [651, 751.25); one at 620 ms passes behind
/// it at 651 ms and closes that window; one at 630 ms waits for 752 ms. Rules out
/// windows on a grid of 100.25 ms (610 ms would open [601.5, 701.75) at once), the
/// wait ending at `until` itself or its nearest millisecond (650.25 or 650 ms), and a
/// caller passing ahead of a delayed one (620 ms at once).
#[test]
fn tower_opens_a_window_at_the_first_call_and_waits_for_the_next_whole_millisecond() {
    let tower = Tower::new(Rule::new(2, Nanos::new(100_250_000)).unwrap());
    let mut state = tower.new_state(Nanos::ZERO);
    let got: Vec<Outcome> = [550, 560, 610, 620, 630]
        .iter()
        .map(|&ms| tower.acquire(&mut state, Nanos::new(ms * MS), 1))
        .collect();
    let after = |ms: u64| Outcome::Delayed(Nanos::new(ms * MS));
    assert_eq!(
        got,
        [
            Outcome::Allowed,
            Outcome::Allowed,
            after(41),
            after(31),
            after(122)
        ]
    );
}

/// One client's calls at 0, 0.999, 0.9995 and 0.9996 s, for `tower` at 2 per second
/// ([`TOWER_LIMIT`]): the first two fill the window opened at 0, the last two wait for
/// the next one, at 1 s.
const TOWER_ROWS: [(u64, &str, u64); 4] = [
    (0, "c", 1),
    (999 * MS, "c", 1),
    (999_500_000, "c", 1),
    (999_600_000, "c", 1),
];
const TOWER_LIMIT: &str = "[limit]\nmax_requests = 2\nwindow = \"1s\"\n";

/// A delayed admission counts in the trailing windows at the instant it passes, and not
/// at all when that is at or after the run's end. tower, 2 per second: calls at 0 and
/// 0.999 s close the first window, calls at 0.9995 and 0.9996 s both pass at 1 s, so
/// `(0 s, 1 s]` holds three. In a run of 1 s the two at 1 s never reach the service
/// (most in a window: 2); one nanosecond longer, they do (3, one excess). Rules out
/// counting at the arrival (4: all four within a second), counting passes past the end,
/// and an end that is inclusive (3 in both runs).
#[test]
fn a_delayed_admission_counts_when_it_passes_and_not_after_the_run_ends() {
    for (duration, expected) in [("1s", (2, 0)), ("1.000000001s", (3, 1))] {
        let (report, decisions) = replay(&TOWER_ROWS, duration, &["tower"], TOWER_LIMIT);
        assert!(
            decisions[0].iter().all(|r| r.allowed),
            "tower never refuses"
        );
        let m = &report.algorithms[0].metrics;
        assert_eq!(
            (m.allowed, m.max_in_window, m.excess),
            (4, expected.0, expected.1),
            "a run of {duration}"
        );
    }
}

/// Three requests at 1,700,000,030 s (22:13:50 UTC) and one at 1,700,000,045 s
/// (22:14:05) from one client: the epoch tests' trace.
const EPOCH_TRACE: &str = "time_s,key\n1700000030,c\n1700000030,c\n1700000030,c\n1700000045,c\n";

/// envoy at 3 per minute on [`EPOCH_TRACE`] written as `t.csv`, times read as Unix seconds.
const ENVOY_ON_EPOCH_TRACE: &str = "name = \"epoch\"\nduration = \"2m\"\nalgorithms = [\"envoy\"]\n\
    [limit]\nmax_requests = 3\nwindow = \"1m\"\n\
    [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\ntime_format = \"epoch_s\"\n";

/// envoy's windows are aligned to the Unix epoch, so on a trace of absolute times they
/// must fall on the epoch's whole minutes, whatever instant the trace starts at. 3 per
/// minute: three requests at 1,700,000,030 s (22:13:50 UTC) fill the minute that ends at
/// 22:14:00; a fourth at 22:14:05 is in the next one and passes.
///
/// The trace's earliest request is t = 0, and the run keeps the instant it stands for:
/// a model that aligned to t = 0 instead would start the windows at 22:13:50 and refuse
/// the fourth.
#[test]
fn envoy_aligns_to_the_unix_epoch_on_a_trace_of_absolute_times() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), EPOCH_TRACE).unwrap();
    let text = ENVOY_ON_EPOCH_TRACE;
    let scenario = crate::sim_support::parse_at(text, &dir.path().join("epoch.toml"));
    let (_, decisions) = crate::sim_support::run_capturing(&scenario, 1);
    let allowed: Vec<bool> = decisions[0].iter().map(|r| r.allowed).collect();
    assert_eq!(allowed, [true, true, true, true]);
}

/// Writes `trace` as `t.csv` beside a scenario of `duration` running `algorithms` under
/// `limit` (TOML lines) on it with `trace_fields` (TOML lines of the `[[traffic]]`
/// table), runs it and returns each algorithm's decisions (allowed or not, in order).
fn on_trace(trace: &str, trace_fields: &str, algorithms: &[&str], limit: &str) -> Vec<Vec<bool>> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), trace).unwrap();
    let names: Vec<String> = algorithms.iter().map(|a| format!("\"{a}\"")).collect();
    let text = format!(
        "name = \"epoch\"\nduration = \"1h\"\nalgorithms = [{}]\n[limit]\n{limit}\
         [[traffic]]\nkind = \"trace\"\npath = \"t.csv\"\n{trace_fields}",
        names.join(", ")
    );
    let scenario = crate::sim_support::parse_at(&text, &dir.path().join("epoch.toml"));
    let (_, decisions) = crate::sim_support::run_capturing(&scenario, 2);
    let allowed = |rows: &Vec<crate::sim_support::Row>| rows.iter().map(|r| r.allowed).collect();
    decisions.iter().map(allowed).collect()
}

/// A trace's `origin` is the instant its t = 0 stands for, so it, not the first
/// request, places envoy's windows: 3 per minute from an `origin` of 22:13:30 UTC, the
/// same four requests (three at 22:13:50, one at 22:14:05) fall in two minutes. With an
/// `origin` 10 s earlier than a whole minute plus 50 s, an unaligned model (windows from
/// t = 0 = 22:13:30) would put all four in one window and refuse the fourth.
#[test]
fn envoy_takes_the_epoch_from_the_traces_origin_when_it_has_one() {
    let csv = EPOCH_TRACE;
    let origin = "time_format = \"epoch_s\"\norigin = \"2023-11-14T22:13:30Z\"\n";
    let limit = "max_requests = 3\nwindow = \"1m\"\n";
    let got = on_trace(csv, origin, &["envoy"], limit);
    assert_eq!(got[0], [true, true, true, true]);
}

/// Python `limits`' sliding-window counter keys its windows on `time.time()`. 3 per
/// 10 s on a trace starting at 1,700,000,005 s: three hits at once fill the window
/// [1,700,000,000, 1,700,000,010); at 1,700,000,011 s the previous window weighs
/// ⌊3 · 9/10⌋ = 2, and 2 + 1 ≤ 3 passes. Aligned to t = 0 instead, 6 s later is still
/// the first window (3 + 1 > 3), and, t = 0 being the epoch's first window, Python's
/// `int()` would count it twice: refused both ways.
#[test]
fn limits_sliding_window_counter_keys_its_windows_on_unix_time_on_a_trace_of_absolute_times() {
    let csv = "time_s,key\n1700000005,c\n1700000005,c\n1700000005,c\n1700000011,c\n";
    let limit = "max_requests = 3\nwindow = \"10s\"\n";
    let absolute = on_trace(
        csv,
        "time_format = \"epoch_s\"\n",
        &["limits_sliding_window_counter"],
        limit,
    );
    assert_eq!(absolute[0], [true, true, true, true]);
    // The same instants as offsets from the run's start: t = 0 is the epoch itself.
    let offsets = "time_s,key\n0,c\n0,c\n0,c\n6,c\n";
    let relative = on_trace(offsets, "", &["limits_sliding_window_counter"], limit);
    assert_eq!(relative[0], [true, true, true, false]);
}

/// HAProxy 2.6 counts in the wall clock's milliseconds and makes a period's start even.
/// 1 per 1 s: a first hit at the odd millisecond 1,700,000,000,001 starts its period at
/// …000, so a hit exactly 1 s later (…1,001) is a millisecond into the next period and
/// the previous one weighs ⌊1 · 999/1000⌋ = 0: it passes. Aligned to t = 0 (an even
/// millisecond), the period starts at the first hit and the second meets the full
/// previous period: refused.
#[test]
fn haproxy_counts_the_wall_clocks_milliseconds_and_their_parity() {
    let csv = "time_s,key\n1700000000001,c\n1700000001001,c\n";
    let limit = "max_requests = 1\nwindow = \"1s\"\n";
    let got = on_trace(csv, "time_format = \"epoch_ms\"\n", &["haproxy"], limit);
    assert_eq!(got[0], [true, true]);
    let relative = on_trace("time_s,key\n0,c\n1,c\n", "", &["haproxy"], limit);
    assert_eq!(relative[0], [true, false]);
}

/// The limiters that do not read the wall clock keep their own origin on a trace of
/// absolute times: Envoy's local filter fills on a timer from its start (t = 0), the
/// textbook fixed window aligns to t = 0, `limits`' fixed window opens at the key's
/// first hit. On the envoy trace above (3 per minute: three at 22:13:50, one at
/// 22:14:05) each refuses the fourth, where envoy passes it.
#[test]
fn presets_whose_peer_ignores_the_wall_clock_keep_t0_on_a_trace_of_absolute_times() {
    let csv = EPOCH_TRACE;
    let algorithms = [
        "envoy",
        "envoy_local",
        "fixed_window",
        "limits_fixed_window",
    ];
    let limit = "max_requests = 3\nwindow = \"1m\"\n";
    let got = on_trace(csv, "time_format = \"epoch_s\"\n", &algorithms, limit);
    assert_eq!(got[0], [true, true, true, true], "envoy");
    for (name, decisions) in algorithms.iter().zip(&got).skip(1) {
        assert_eq!(decisions, &[true, true, true, false], "{name}");
    }
}

/// Two traces of absolute times are each replayed from their own earliest request, so
/// a run with an epoch-aligned preset has no one t = 0 unless they share an `origin`:
/// an error naming the second trace, and the same `origin` on both runs.
#[test]
fn two_traces_with_different_t0_are_refused_to_an_aligned_preset_and_one_origin_mends_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "time_s,key\n1700000030,a\n").unwrap();
    std::fs::write(dir.path().join("b.csv"), "time_s,key\n1700000031,b\n").unwrap();
    let text = |algorithm: &str, origin: &str| {
        format!(
            "name = \"two\"\nduration = \"1m\"\nalgorithms = [\"{algorithm}\"]\n\
             [limit]\nmax_requests = 3\nwindow = \"1m\"\n\
             [[traffic]]\nkind = \"trace\"\npath = \"a.csv\"\ntime_format = \"epoch_s\"\n{origin}\
             [[traffic]]\nkind = \"trace\"\npath = \"b.csv\"\ntime_format = \"epoch_s\"\n{origin}"
        )
    };
    let path = dir.path().join("two.toml");
    let run = |text: &str| {
        let s = crate::sim_support::parse_at(text, &path);
        let options = ratesim::sim::RunOptions::default();
        ratesim::sim::run(&s, &options, &mut |_| Ok(Box::new(ratesim::sim::NoopSink)))
    };
    let err = run(&text("envoy", "")).unwrap_err().to_string();
    assert!(
        err.contains("b.csv") && err.contains("a.csv") && err.contains("origin"),
        "{err}"
    );
    assert!(
        run(&text("fixed_window", "")).is_ok(),
        "no preset reads the wall clock"
    );
    let shared = "origin = \"2023-11-14T22:13:00Z\"\n";
    assert_eq!(
        run(&text("envoy", shared)).unwrap().algorithms[0]
            .metrics
            .allowed,
        2
    );
}

/// The epoch reaches every command that builds algorithms from a scenario: a sweep's
/// configurations and a deployment's servers decide on the Unix minute too. 3 per
/// minute from 22:13:50 UTC: the fourth request (22:14:05) passes in each.
#[test]
fn sweeps_and_deployments_align_envoy_to_the_epoch_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), EPOCH_TRACE).unwrap();
    let text = ENVOY_ON_EPOCH_TRACE;
    let path = dir.path().join("epoch.toml");
    let scenario = crate::sim_support::parse_at(text, &path);
    let rules = [3, 2].map(|n| Rule::new(n, Nanos::from_secs(60)).unwrap());
    let options = ratesim::sim::RunOptions::default();
    let reports = ratesim::sim::sweep(&scenario, &rules, &options).unwrap();
    let allowed: Vec<u64> = reports
        .iter()
        .map(|r| r.algorithms[0].metrics.allowed)
        .collect();
    // 3 per minute: all four; 2 per minute: two of the three, then the fourth.
    assert_eq!(allowed, [4, 3]);
    let deployed = format!("{text}[deployment]\nnodes = 2\nstore = \"shared\"\n");
    let scenario = crate::sim_support::parse_at(&deployed, &path);
    let (report, _) = crate::sim_support::run_capturing(&scenario, 1);
    assert_eq!(report.algorithms[0].metrics.allowed, 4);
}

/// `ratesim import` of a ratelimit service descriptor with a combined log, then
/// `ratesim run`: envoy's minute is the log's Unix minute. 3 per minute: three requests
/// at 22:13:50 UTC and one at 22:14:05; the fourth passes.
#[test]
fn an_imported_envoy_scenario_on_a_combined_log_aligns_to_the_unix_minute() {
    use assert_cmd::Command;
    let dir = tempfile::tempdir().unwrap();
    let yaml = "domain: d\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      \
                unit: minute\n      requests_per_unit: 3\n";
    std::fs::write(dir.path().join("ratelimit.yaml"), yaml).unwrap();
    let line = |time: &str| {
        format!("10.0.0.1 - - [14/Nov/2023:{time} +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"c\"\n")
    };
    let log = [
        line("22:13:50"),
        line("22:13:50"),
        line("22:13:50"),
        line("22:14:05"),
    ]
    .concat();
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let ratesim = |args: &[&str]| {
        let out = Command::cargo_bin("ratesim")
            .unwrap()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert!(out.status.success(), "{args:?}\n{}", text(&out.stderr));
        text(&out.stdout)
    };
    let toml = ratesim(&["import", "ratelimit.yaml", "--trace", "access.log"]);
    std::fs::write(dir.path().join("imported.toml"), toml).unwrap();
    ratesim(&[
        "run",
        "imported.toml",
        "--out",
        "o",
        "--quiet",
        "--no-charts",
    ]);
    let csv = std::fs::read_to_string(dir.path().join("o/decisions.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "allowed").unwrap();
    let allowed: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(at).unwrap())
        .collect();
    assert_eq!(allowed, ["true", "true", "true", "true"], "{csv}");
}

/// Wherever t = 0 lies on the wall clock, a denied request's wait is exact: it
/// passes at `now + retry_after` and not a nanosecond before, and `reset_after`
/// brings `remaining` back to the capacity exactly then.
fn waits_are_exact<A: Algorithm>(algo: &A, times: &[u64]) {
    let mut state = algo.new_state(Nanos::ZERO);
    for &t in times {
        let now = Nanos::new(t);
        if let Some(wait) = algo.retry_after(&state, now, 1) {
            let at = now.saturating_add(wait);
            assert!(algo.would_pass(&state, at, 1), "{} at {at}", algo.name());
            if wait > Nanos::ZERO {
                let before = Nanos::new(at.as_u64() - 1);
                assert!(
                    !algo.would_pass(&state, before, 1),
                    "{} at {before}",
                    algo.name()
                );
            }
        }
        let reset = now.saturating_add(algo.reset_after(&state, now));
        assert_eq!(
            algo.remaining(&state, reset),
            algo.capacity(),
            "{}",
            algo.name()
        );
        algo.try_acquire(&mut state, now, 1);
    }
}

#[test]
fn the_aligned_presets_waits_are_exact_wherever_t0_lies_on_the_wall_clock() {
    let rule = Rule::new(3, Nanos::from_millis(1_000)).unwrap();
    // Bursts, a gap of under a window, instants off the millisecond.
    let times: Vec<u64> = (0..60u64)
        .map(|i| i * 97_345_679 + (i % 7) * 1_000_001)
        .collect();
    let origins = [
        0,
        1,
        999_999,
        1_000_000,
        1_500_000_123,
        1_700_000_000_987_654_321,
        -1,
    ];
    for ns in origins {
        let origin = ratesim::presets::EpochOffset::from_nanos(ns);
        waits_are_exact(&ratesim::presets::EnvoyRateLimit::at(rule, origin), &times);
        waits_are_exact(
            &ratesim::presets::LimitsSlidingWindowCounter::at(rule, origin),
            &times,
        );
        waits_are_exact(&ratesim::presets::Haproxy::at(rule, origin), &times);
    }
}

/// A shaper's delays are counted and measured exactly: `tower` at 2 per second opens
/// its window at 0; the requests at 0.9995 s and 0.9996 s wait for the next window, at
/// 1 s: two delayed admissions, of 0.5 ms and 0.4 ms (nearest rank: the median is the
/// first of two), and none for the two that passed at once.
#[test]
fn a_shapers_delays_are_counted_and_measured_to_the_nanosecond() {
    let (report, _) = replay(&TOWER_ROWS, "2s", &["tower"], TOWER_LIMIT);
    let m = &report.algorithms[0].metrics;
    assert_eq!(
        (m.allowed, m.delayed, m.delay_p50_ns, m.delay_max_ns),
        (4, 2, Some(400_000), Some(500_000))
    );
}

/// A delayed admission counts when it passes, through the whole simulator: `tower` at 2
/// per second, one request a second for 1,022 s, then three within 0.2 ms; the third
/// waits for the window after, so no trailing second holds more than two. Counted at its
/// arrival instead, a second would hold three. (Written when a chunk held 1,024 arrivals,
/// which made the third the first of a chunk; chunks are longer now, and the unit test
/// `a_delayed_admission_first_in_its_chunk_counts_when_it_passes` in
/// `src/sim/engine/record.rs` pins that case at any chunk size.)
#[test]
fn a_delayed_admission_counts_when_it_passes_not_when_it_arrived() {
    let mut rows: Vec<(u64, &str, u64)> = (0..1022).map(|i| (i * S, "c", 1)).collect();
    rows.extend([(1022 * S + MS / 10, "c", 1), (1022 * S + MS / 5, "c", 1)]);
    assert_eq!(rows.len(), 1024);
    rows.push((1022 * S + 3 * MS / 10, "c", 1));
    let (report, _) = replay(&rows, "1030s", &["tower"], TOWER_LIMIT);
    let m = &report.algorithms[0].metrics;
    assert_eq!((m.allowed, m.delayed, m.max_in_window), (1025, 1, 2));
}

/// Delayed admissions that pass at one instant are counted in the order they were
/// admitted, so the worst client is the first to reach the maximum in that order:
/// `tower` at 2 per second, clients `a` and `b` (numbered in that order, after `c`, the
/// first admitted, whose count the report follows and which would win a tie) each fill
/// a window opened at 0 and have two more requests wait for the next one, `b`'s
/// admitted first; all four pass at 1 s, where each client's trailing second holds
/// three. In key order, `a` would be first.
#[test]
fn delayed_admissions_passing_together_count_in_admission_order() {
    let rows = [
        (0, "c", 1),
        (0, "a", 1),
        (0, "b", 1),
        (900 * MS, "a", 1),
        (900 * MS, "b", 1),
        (930 * MS, "b", 1),
        (940 * MS, "b", 1),
        (950 * MS, "a", 1),
        (960 * MS, "a", 1),
    ];
    let (report, _) = replay(&rows, "2s", &["tower"], TOWER_LIMIT);
    let m = &report.algorithms[0].metrics;
    assert_eq!((m.delayed, m.max_in_window), (4, 3));
    assert_eq!(m.worst_key.as_deref(), Some("b"));
}
