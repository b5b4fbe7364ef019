//! Scenario files (docs/scenarios.md): exact decimals, evenly spaced arrivals, where a
//! boundary burst's requests fall, how clients are picked and how sources merge, each
//! at the input where the documented rule and its neighbours disagree.

use std::path::Path;

use ratesim::sim::Scenario;

use crate::sim_support::{Row, parse_at};
use crate::{S, run_text};

/// A one-source scenario: `limit` and `traffic` as TOML lines, the fixed window only.
fn scenario(duration: &str, limit: &str, traffic: &str) -> String {
    format!(
        "name = \"edge\"\nduration = {duration}\nalgorithms = [\"fixed_window\"]\n\
         [limit]\n{limit}\n[[traffic]]\n{traffic}\n"
    )
}

/// The decisions of the fixed window on `text`.
fn decisions(text: &str) -> Vec<Row> {
    run_text(text).1.remove(0)
}

fn times(rows: &[Row]) -> Vec<u64> {
    rows.iter().map(|r| r.time.as_u64()).collect()
}

const LIMIT: &str = "max_requests = 1000\nwindow = \"10s\"";
const UNIFORM: &str = "kind = \"uniform\"\nrate = 1";

/// Durations are exact decimals to the nanosecond. A TOML float is read through its
/// shortest decimal text: `1.001` is 1,001,000,000 ns (times 10⁹ as a float and cut,
/// 1,000,999,999) and `8934210.3` is 8,934,210,300,000,000 ns (times 10⁹ as a float and
/// rounded, one more; printed to nine places, `8934210.300000001`). Ten decimal places
/// of a minute are six nanoseconds, exact, so allowed; a thousandth of a nanosecond is
/// refused, never rounded or cut.
#[test]
fn durations_are_exact_decimals_whatever_the_unit_or_the_toml_type() {
    let window_of = |window: &str| {
        let limit = format!("max_requests = 5\nwindow = {window}");
        Scenario::parse(&scenario("\"1m\"", &limit, UNIFORM), Path::new("edge.toml"))
            .map(|s| s.rule.window().as_u64())
            .map_err(|e| e.to_string())
    };
    assert_eq!(window_of("1.001"), Ok(1_001_000_000));
    assert_eq!(window_of("8934210.3"), Ok(8_934_210_300_000_000));
    assert_eq!(window_of("\"0.0000000001m\""), Ok(6));
    assert_eq!(window_of("\"1.000001ms\""), Ok(1_000_001));
    for finer in ["\"1.0000001ms\"", "\"0.9999999999\"", "0.9999999999"] {
        let err = window_of(finer).unwrap_err();
        assert!(
            err.contains("is finer than one nanosecond"),
            "{finer}: {err}"
        );
    }
    let duration = Scenario::parse(&scenario("8934210.3", LIMIT, UNIFORM), Path::new("e.toml"));
    assert_eq!(duration.unwrap().duration.as_u64(), 8_934_210_300_000_000);
}

/// A uniform source's arrival `i` is at `start + floor(i / rate)`. At 3 per second:
/// 0, 333,333,333 ns, 666,666,666 ns, 1 s. Rules out rounding to nearest (…667) and up
/// (…334). A rate of nine decimal places is read exactly (at 0.666666666 per second the
/// second arrival is at 1.500000001 s, not …002); ten is refused.
#[test]
fn uniform_arrivals_are_floored_to_the_nanosecond() {
    let text = scenario("\"1.5s\"", LIMIT, "kind = \"uniform\"\nrate = 3");
    assert_eq!(
        times(&decisions(&text)),
        [0, 333_333_333, 666_666_666, 1_000_000_000, 1_333_333_333]
    );
    // 1 / 0.666666666 s = 1,500,000,001.5 ns: floored, not rounded to nearest.
    let text = scenario("\"3s\"", LIMIT, "kind = \"uniform\"\nrate = 0.666666666");
    assert_eq!(times(&decisions(&text)), [0, 1_500_000_001]);
    let refused = Scenario::parse(
        &scenario(
            "\"3s\"",
            LIMIT,
            "kind = \"uniform\"\nrate = \"0.6666666667\"",
        ),
        Path::new("edge.toml"),
    );
    let err = refused.unwrap_err().to_string();
    assert!(err.contains("has more than nine decimal places"), "{err}");
}

/// A rate written as a multiple of the limit is `multiple × keys × N / W`, rounded down
/// to 10⁻⁹ requests per second: `"1x"` of 1 per 3 s is 0.333333333 per second, so the
/// second arrival is at 3.000000003 s. Rules out the exact rational (3 s) and rounding
/// the rate up (0.333333334: 2.999999994 s).
#[test]
fn a_rate_relative_to_the_limit_is_rounded_down_to_a_billionth() {
    let text = scenario(
        "\"7s\"",
        "max_requests = 1\nwindow = \"3s\"",
        "kind = \"uniform\"\nrate = \"1x\"",
    );
    assert_eq!(times(&decisions(&text)), [0, 3_000_000_003, 6_000_000_006]);
}

/// A boundary burst's first boundary is the first whose "before" half starts at or
/// after `start`: with a spread of 2 ns that half starts 3 ns before the boundary, so
/// `start = 10 s − 3 ns` keeps the boundary at 10 s and `10 s − 2 ns` moves to 20 s.
/// Rules out the first boundary at or after `start` (the half before it cut off), and
/// a half that must start strictly after `start`.
#[test]
fn a_boundary_bursts_first_boundary_is_the_first_whose_half_starts_at_or_after_start() {
    let burst = |start: &str| {
        let traffic =
            format!("kind = \"boundary_burst\"\nsize = 3\nspread = \"2ns\"\nstart = \"{start}\"");
        let rows = decisions(&scenario(
            "\"25s\"",
            "max_requests = 3\nwindow = \"10s\"",
            &traffic,
        ));
        times(&rows)[..6].to_vec()
    };
    let b = 10 * S;
    assert_eq!(
        burst("9.999999997s"),
        [b - 3, b - 2, b - 1, b, b + 1, b + 2]
    );
    let b = 20 * S;
    assert_eq!(
        burst("9.999999998s"),
        [b - 3, b - 2, b - 1, b, b + 1, b + 2]
    );
}

/// A spread half-burst puts request `i` of `size` at `floor(i · spread / (size − 1))`
/// from the half's start: 4 requests over 4 ns sit at 0, 1, 2 and 4 ns (evenly, but
/// 1.33 and 2.67 floored). Rules out rounding to nearest (0, 1, 3, 4) and up
/// (0, 2, 3, 4). And `end` is exclusive: a source ending at the boundary keeps only
/// the half before it.
#[test]
fn a_spread_burst_floors_each_position_and_end_is_exclusive() {
    let limit = "max_requests = 4\nwindow = \"10s\"";
    let traffic = "kind = \"boundary_burst\"\nsize = 4\nspread = \"4ns\"\nend = \"11s\"";
    let b = 10 * S;
    assert_eq!(
        times(&decisions(&scenario("\"11s\"", limit, traffic))),
        [b - 5, b - 4, b - 3, b - 1, b, b + 1, b + 2, b + 4]
    );
    let until = |end: &str| {
        let traffic = format!("kind = \"boundary_burst\"\nsize = 2\nend = \"{end}\"");
        times(&decisions(&scenario("\"30s\"", limit, &traffic)))
    };
    assert_eq!(until("10s"), [b - 1, b - 1]);
    assert_eq!(until("10.000000001s"), [b - 1, b - 1, b, b]);
}

/// Each client's share of `arrivals` requests picked by `popularity` (TOML lines) among
/// `keys` clients.
fn shares(keys: u32, popularity: &str, arrivals: u64) -> Vec<f64> {
    let traffic = format!("kind = \"uniform\"\nrate = {arrivals}\nkeys = {keys}\n{popularity}");
    let rows = decisions(&scenario("\"1s\"", LIMIT, &traffic));
    assert_eq!(rows.len() as u64, arrivals);
    (0..keys)
        .map(|i| {
            let name = format!("client-{i}");
            rows.iter().filter(|r| r.key == name).count() as f64 / arrivals as f64
        })
        .collect()
}

/// `zipf`: client `client-i` is picked in proportion to `1/(i + 1)^s` (the first client
/// is rank 1); `uniform`: all alike. Of 60,000 picks (a binomial share's standard
/// deviation is under 0.002, so ±0.01 is five of them), two clients at `s = 1` share
/// 2/3 and 1/3, three at `s = 2` 36/49, 9/49 and 4/49. Rules out ranking from 2 (0.6),
/// the order reversed, and the exponent ignored.
#[test]
fn zipf_picks_client_i_in_proportion_to_one_over_i_plus_one_to_the_s() {
    let close = |got: &[f64], expected: &[f64]| {
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(expected) {
            assert!((g - e).abs() < 0.01, "{got:?} against {expected:?}");
        }
    };
    let zipf = |s: &str| format!("key_popularity = \"zipf\"\nzipf_exponent = {s}");
    close(&shares(2, &zipf("1.0"), 60_000), &[2.0 / 3.0, 1.0 / 3.0]);
    close(
        &shares(3, &zipf("2.0"), 60_000),
        &[36.0 / 49.0, 9.0 / 49.0, 4.0 / 49.0],
    );
    close(
        &shares(2, "key_popularity = \"uniform\"", 60_000),
        &[0.5, 0.5],
    );
}

/// Sources merge in time order; at one instant, in declaration order, then each
/// source's own order, in which a boundary burst's clients take turns. `zeta` (a burst
/// of 2 from 2 clients) and `alpha` (one request) all arrive 1 ns before 10 s. Rules out
/// ordering ties by name, by the later declaration, and a burst sending one client's
/// half before the next's.
#[test]
fn arrivals_at_one_instant_keep_declaration_order_then_each_sources_own_order() {
    let zeta = "[[traffic]]\nkind = \"boundary_burst\"\nsize = 2\nkeys = 2\nkey_prefix = \"zeta\"\n\
                end = \"10s\"\n";
    let alpha = "[[traffic]]\nkind = \"uniform\"\nrate = 1\nkey_prefix = \"alpha\"\n\
                 start = \"9.999999999s\"\nend = \"10s\"\n";
    let order = |first: &str, second: &str| {
        let text = format!(
            "name = \"edge\"\nduration = \"20s\"\nalgorithms = [\"fixed_window\"]\n\
             [limit]\nmax_requests = 10\nwindow = \"10s\"\n{first}{second}"
        );
        let rows = decisions(&text);
        assert!(
            rows.iter().all(|r| r.time.as_u64() == 10 * S - 1),
            "{rows:?}"
        );
        let seqs: Vec<u64> = rows.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4]);
        rows.into_iter().map(|r| r.key).collect::<Vec<String>>()
    };
    assert_eq!(
        order(zeta, alpha),
        ["zeta-0", "zeta-1", "zeta-0", "zeta-1", "alpha-0"]
    );
    assert_eq!(
        order(alpha, zeta),
        ["alpha-0", "zeta-0", "zeta-1", "zeta-0", "zeta-1"]
    );
}

/// `compare --limit` / `run --limit` replace the rule: a `boundary_burst` whose size
/// is the old limit follows the new one, any other keeps its size. At sizes one either
/// side of the old limit: rules out following every size at most, or at least, the
/// limit.
#[test]
fn only_a_burst_the_size_of_the_old_limit_follows_a_new_limit() {
    use ratesim::sim::TrafficKind;
    use ratesim::{Nanos, Rule};
    let text = "name = \"edge\"\nduration = \"60s\"\n[limit]\nmax_requests = 5\nwindow = \"10s\"\n\
                [[traffic]]\nkind = \"boundary_burst\"\nsize = 5\n\
                [[traffic]]\nkind = \"boundary_burst\"\nsize = 4\n\
                [[traffic]]\nkind = \"boundary_burst\"\nsize = 6\n";
    let mut s = parse_at(text, Path::new("edge.toml"));
    s.set_rule(Rule::new(8, Nanos::from_secs(10)).unwrap())
        .unwrap();
    let sizes: Vec<u64> = s
        .traffic
        .iter()
        .map(|t| match t.kind {
            TrafficKind::BoundaryBurst { size, .. } => size,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(sizes, [8, 4, 6]);
}
