//! The metrics of docs/design.md §6, through whole runs: each definition at the input
//! where it and its nearest alternative count differently.

use ratesim::Nanos;
use ratesim::sim::{LatencyHistogram, Metrics};

use crate::{S, replay};

/// One algorithm's metrics for one client's requests at `times` (ns), cost 1, under
/// `limit` (TOML lines of `[limit]`).
fn one_client(algorithm: &str, times: &[u64], limit: &str, client: &str) -> Metrics {
    let rows: Vec<(u64, &str, u64)> = times.iter().map(|&t| (t, "c", 1)).collect();
    let body = format!("[limit]\n{limit}\n{client}");
    let (report, _) = replay(&rows, "30s", &[algorithm], &body);
    report.algorithms[0].metrics.clone()
}

/// `max_in_window` counts in the half-open `(t − W, t]`, and `excess` counts an
/// admission only when its key's count goes *over* the limit. Under 1 per 10 s the
/// fixed window admits requests exactly 10 s apart (one never sees the other: 1, no
/// excess) and 10 s − 1 ns apart (2, one excess); under 2 per 10 s, two admissions
/// reach the limit without exceeding it. Rules out a closed window `[t − W, t]`, a
/// window that still counts at `a + W + 1 ns`, and excess counted at the limit.
#[test]
fn a_window_is_half_open_and_excess_begins_above_the_limit() {
    let one = "max_requests = 1\nwindow = \"10s\"";
    let two = "max_requests = 2\nwindow = \"10s\"";
    for (times, limit, expected) in [
        (&[0, 10 * S][..], one, (1, 0)),
        (&[1, 10 * S][..], one, (2, 1)),
        (&[0, S][..], two, (2, 0)),
        (&[5 * S, 6 * S, 10 * S, 11 * S][..], two, (4, 2)),
    ] {
        let m = one_client("fixed_window", times, limit, "");
        assert_eq!(m.allowed as usize, times.len(), "{times:?}: all admitted");
        assert_eq!(
            (m.max_in_window, m.excess),
            expected,
            "{times:?} under {limit}"
        );
    }
}

/// `clients_denied` counts every key that saw a denial, `never_fits` included, and a
/// never-fitting request is denied at its first attempt, so it counts in
/// `requests_denied_share` too. Rules out leaving requests that can never pass out of
/// either count.
#[test]
fn a_request_that_can_never_fit_counts_its_client_as_denied() {
    let rows = [(0, "big", 3), (S, "small", 1)];
    let (report, _) = replay(
        &rows,
        "30s",
        &["all"],
        "[limit]\nmax_requests = 2\nwindow = \"10s\"\n",
    );
    assert_eq!(report.algorithms.len(), 6);
    for a in &report.algorithms {
        let m = &a.metrics;
        assert_eq!(
            (m.never_fits, m.denied, m.clients_denied),
            (1, 1, 1),
            "{}",
            a.name
        );
        assert_eq!(m.requests_denied_share, Some(0.5), "{}", a.name);
    }
}

/// `requests_denied_share` is requests denied at least once over requests: a request
/// denied on its arrival and again on its first retry counts once. 1 per 10 s, two
/// retries: of three requests, two are denied (one of them twice) and all succeed in
/// the end: 2/3. Rules out `denied / requests` (1) and `denied / attempts` (1/2).
#[test]
fn a_request_denied_twice_counts_once_in_the_denied_share() {
    let m = one_client(
        "fixed_window",
        &[0, S, 2 * S],
        "max_requests = 1\nwindow = \"10s\"",
        "[client]\nkind = \"retry\"\nmax_retries = 2\n",
    );
    assert_eq!(
        (m.requests, m.attempts, m.denied, m.succeeded),
        (3, 6, 3, Some(3))
    );
    assert_eq!((m.requests_denied, m.clients_denied), (2, 1));
    assert_eq!(m.requests_denied_share, Some(2.0 / 3.0));
}

/// `worst_key`: the followed key (the first admitted) if it reached the maximum, else
/// the first key *in time* to reach it. Here `a` is followed and reaches 1; `z` reaches
/// 2 at 2 s, `m` only at 4 s. Rules out the last key to reach it and the first by name.
#[test]
fn the_worst_key_is_the_first_in_time_to_reach_the_maximum_not_the_first_by_name() {
    let rows = [
        (0, "a", 1),
        (S, "z", 1),
        (2 * S, "z", 1),
        (3 * S, "m", 1),
        (4 * S, "m", 1),
    ];
    let (report, _) = replay(
        &rows,
        "30s",
        &["all"],
        "[limit]\nmax_requests = 10\nwindow = \"100s\"\n",
    );
    for a in &report.algorithms {
        assert_eq!(a.metrics.max_in_window, 2, "{}", a.name);
        assert_eq!(a.metrics.worst_key.as_deref(), Some("z"), "{}", a.name);
    }
}

/// `retry_after_secs_*` judge the HTTP header, `retry_after` in whole seconds rounded
/// up (at least 1), against the exact earliest passing instant. 1 per 2 s on the fixed
/// window, whose own advice is exact: denied at 0.6 s (waits 1.4 s; the header says
/// 2 s: too late), at 1 s (1 s: exact) and at 2 s − 1 ns (1 ns; the header says 1 s:
/// too late). Rules out rounding to nearest and rounding down (the first and the last
/// would be too early).
#[test]
fn the_whole_second_header_rounds_up_and_is_judged_against_the_exact_instant() {
    let m = one_client(
        "fixed_window",
        &[0, 600_000_000, S, 2 * S - 1],
        "max_requests = 1\nwindow = \"2s\"",
        "",
    );
    assert_eq!(m.denied, 3);
    assert_eq!(m.retry_after_exact, 3);
    assert_eq!(
        (
            m.retry_after_secs_exact,
            m.retry_after_secs_too_early,
            m.retry_after_secs_too_late
        ),
        (1, 0, 2)
    );
}

/// Latency percentiles are nearest-rank: the value at rank `ceil(q · n)`. Of the
/// latencies 1 … 60 ns (exact: below 128 ns a bucket is one nanosecond), the median is
/// the 30th and the 99th percentile the 60th (59.4 rounds up). Rules out rank
/// `floor(q · n) + 1` (31) and rank `round(q · n)` (59).
#[test]
fn latency_percentiles_take_the_nearest_rank_rounded_up() {
    let mut h = LatencyHistogram::default();
    for v in 1..=60 {
        h.record(Nanos::new(v));
    }
    assert_eq!(h.quantile(0.5), Some(30));
    assert_eq!(h.quantile(0.99), Some(60));
}
