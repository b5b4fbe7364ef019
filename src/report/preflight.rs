//! What is said about a scenario before it runs: the `validate` line that describes
//! it, the warning for an enormous run, and the one for a run too short to show the
//! `--limit` it was given.
//!
//! Pure text from a loaded [`Scenario`]. This module must not load, validate or run a
//! scenario, and it never prints: the caller decides where each line goes (and adds
//! its own `ratesim: warning:` prefix).

use std::path::Path;

use crate::rule::Rule;
use crate::sim::{ClientModel, Scenario};

/// Above this many expected arrivals, `validate`, `run` and `compare` warn.
pub const ENORMOUS_RUN: u128 = 1_000_000_000;

/// Above this estimated size of `decisions.csv` (in bytes), they warn too: a run of a
/// few million requests is quick, but its one row per decision is not a small file.
pub const LARGE_DECISIONS_CSV: u128 = 1_000_000_000;

/// The largest `decisions.csv` (estimated, in bytes) a run writes without `--force`,
/// whatever the free space: 100 GB, far beyond any run a reader opens in a spreadsheet.
pub const DECISIONS_CSV_BOUND: u128 = 100_000_000_000;

/// Why a run that would write `decisions.csv` (`decisions`) is refused before it
/// starts: its estimated size exceeds `free` (the bytes free on the output's disk, when
/// known) or [`DECISIONS_CSV_BOUND`]. `None` when it fits; the caller lets `--force`
/// override.
pub fn size_refusal(scenario: &Scenario, decisions: bool, free: Option<u128>) -> Option<String> {
    if !decisions {
        return None;
    }
    let arrivals = scenario.expected_arrivals();
    let rows = arrivals.saturating_mul(scenario.algorithms.len() as u128);
    let file_bytes = rows.saturating_mul(row_bytes(scenario, arrivals));
    let room = match free {
        Some(free) if free < DECISIONS_CSV_BOUND => {
            format!("the {} free on the output's disk", bytes(free))
        }
        _ => format!("the {} a run writes unasked", bytes(DECISIONS_CSV_BOUND)),
    };
    let limit = free.map_or(DECISIONS_CSV_BOUND, |f| f.min(DECISIONS_CSV_BOUND));
    (file_bytes > limit).then(|| {
        format!(
            "decisions.csv would be about {} ({} rows), more than {room}; pass \
             --no-decisions to skip it, or --force to run anyway",
            bytes(file_bytes),
            grouped(rows)
        )
    })
}

/// A warning for a scenario expected to generate more than [`ENORMOUS_RUN`] requests,
/// or, if `decisions` (decisions.csv would be written), a decisions.csv estimated above
/// [`LARGE_DECISIONS_CSV`]: the estimate and that file's approximate size. `None` for an
/// ordinary run.
pub fn size_warning(scenario: &Scenario, decisions: bool) -> Option<String> {
    let arrivals = scenario.expected_arrivals();
    let algorithms = scenario.algorithms.len();
    let rows = arrivals.saturating_mul(algorithms as u128);
    let file_bytes = rows.saturating_mul(row_bytes(scenario, arrivals));
    let large_file = decisions && file_bytes > LARGE_DECISIONS_CSV;
    if arrivals <= ENORMOUS_RUN && !large_file {
        return None;
    }
    let mut text = format!("about {} requests to simulate", grouped(arrivals));
    if decisions {
        let some = match scenario.client {
            ClientModel::Open => "about",
            ClientModel::Retry { .. } => "at least",
        };
        text.push_str(&format!(
            "; decisions.csv would hold {some} {} rows ({algorithms} algorithm{}), about {} \
             (--no-decisions skips it)",
            grouped(rows),
            plural(algorithms),
            bytes(file_bytes),
        ));
    }
    Some(text)
}

/// The approximate size of one row of `decisions.csv`: about 50 bytes plus the digits
/// of its seq and of its time in whole seconds (measured on the bundled scenarios).
fn row_bytes(scenario: &Scenario, arrivals: u128) -> u128 {
    let digits = |n: u128| u128::from(n.checked_ilog10().map_or(1, |d| d + 1));
    50 + digits(arrivals) + digits(u128::from(scenario.duration.as_u64() / 1_000_000_000))
}

/// The `ok: …` line `validate` prints for a good `file` (its name, traffic sources,
/// algorithms, client and limits), followed by a `warning: …` line for an enormous run.
pub fn validation_summary(file: &Path, scenario: &Scenario) -> String {
    let warning = size_warning(scenario, true)
        .map(|w| format!("warning: {}: {w}\n", file.display()))
        .unwrap_or_default();
    format!(
        "ok: {} ({}: {} traffic source{}, {} algorithm{}, {} client, limit {}{})\n",
        file.display(),
        scenario.name,
        scenario.traffic.len(),
        plural(scenario.traffic.len()),
        scenario.algorithms.len(),
        plural(scenario.algorithms.len()),
        scenario.client.name(),
        scenario.rule,
        scenario
            .extra_limits
            .iter()
            .map(|l| format!(" and {l}"))
            .collect::<String>(),
    ) + &warning
}

/// A warning when `scenario`, given the limit `rule` by `--limit`, lasts less than two
/// of its windows: over-admission shows across window boundaries, so such a run cannot
/// show it, whatever the algorithm. `None` when the run is long enough.
pub fn short_run_warning(scenario: &Scenario, rule: Rule) -> Option<String> {
    let windows = scenario.duration.as_u64() / rule.window().as_u64();
    (windows < 2).then(|| {
        format!(
            "{}: the run lasts {}, less than two windows of --limit {rule}, so no \
             algorithm can be seen to over-admit; give the scenario a longer `duration`",
            scenario.name, scenario.duration
        )
    })
}

/// `n` with thousands separators: `86,400,000,000,000`.
fn grouped(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in decimal units, two significant figures: `36 PB`, `1.2 GB`.
fn bytes(n: u128) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 999.5 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if value < 9.95 && unit > 0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_puts_a_comma_every_three_digits_from_the_right() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(86_400_000_000_000), "86,400,000,000,000");
    }

    #[test]
    fn bytes_keep_two_significant_figures_in_decimal_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_000), "1.0 kB");
        assert_eq!(bytes(1_234_000_000), "1.2 GB");
        assert_eq!(bytes(36_000_000_000_000_000), "36 PB");
        // Past the largest unit the number grows instead.
        assert_eq!(bytes(12_000_000_000_000_000_000_000), "12000 EB");
    }

    fn scenario(toml: &str) -> Scenario {
        Scenario::parse(toml, Path::new("test.toml")).expect("the test scenario parses")
    }

    const SMALL: &str = r#"
        name = "small"
        duration = "10s"
        algorithms = ["fixed_window", "gcra"]
        [limit]
        max_requests = 5
        window = "10s"
        [[traffic]]
        kind = "uniform"
        rate = 2.0
    "#;

    #[test]
    fn a_decisions_csv_larger_than_the_free_space_or_the_bound_is_refused() {
        let small = scenario(SMALL);
        // 20 arrivals × 2 algorithms = 40 rows of 50 + 2 + 2 bytes (the digits of 20
        // arrivals and of 10 s) = 2,160 bytes.
        let refused = size_refusal(&small, true, Some(1_000)).expect("2.2 kB > 1 kB free");
        assert!(
            refused.starts_with(
                "decisions.csv would be about 2.2 kB (40 rows), more than the 1.0 kB free"
            ),
            "{refused}"
        );
        assert!(refused.ends_with("--no-decisions to skip it, or --force to run anyway"));
        assert_eq!(size_refusal(&small, true, Some(2_160)), None);
        assert_eq!(size_refusal(&small, true, None), None);
        assert_eq!(
            size_refusal(&small, false, Some(0)),
            None,
            "no decisions.csv"
        );
        // 36500 days at 2 a second: far beyond the bound even on an empty huge disk.
        let century = scenario(&SMALL.replace("duration = \"10s\"", "duration = \"36500d\""));
        let refused = size_refusal(&century, true, Some(u128::MAX)).expect("beyond the bound");
        assert!(
            refused.contains("more than the 100 GB a run writes unasked"),
            "{refused}"
        );
        assert_eq!(size_refusal(&century, false, Some(0)), None);
    }

    #[test]
    fn an_ordinary_run_gets_no_size_warning() {
        assert_eq!(size_warning(&scenario(SMALL), true), None);
    }

    #[test]
    fn an_enormous_run_warns_with_its_size_and_that_of_decisions_csv() {
        let huge = SMALL
            .replace("duration = \"10s\"", "duration = \"1000s\"")
            .replace("rate = 2.0", "rate = 3000000.0");
        let s = scenario(&huge);
        assert_eq!(
            size_warning(&s, false).as_deref(),
            Some("about 3,000,000,000 requests to simulate")
        );
        let warning = size_warning(&s, true).expect("3e9 arrivals are enormous");
        assert!(
            warning.starts_with(
                "about 3,000,000,000 requests to simulate; decisions.csv would hold about \
                 6,000,000,000 rows (2 algorithms), about "
            ),
            "{warning}"
        );
        assert!(warning.ends_with(" (--no-decisions skips it)"), "{warning}");
    }

    /// 30 M requests on six algorithms is a quick run but a decisions.csv of about 11 GB:
    /// that alone is worth a warning (unless --no-decisions), `validate`'s too.
    #[test]
    fn a_decisions_csv_above_a_gigabyte_warns_even_for_a_modest_run() {
        let modest = SMALL
            .replace("duration = \"10s\"", "duration = \"3000s\"")
            .replace("rate = 2.0", "rate = 10000.0")
            .replace("[\"fixed_window\", \"gcra\"]", "[\"all\"]");
        let s = scenario(&modest);
        assert_eq!(s.expected_arrivals(), 30_000_000);
        let warning = size_warning(&s, true).expect("180 M rows are worth a warning");
        assert!(
            warning.starts_with(
                "about 30,000,000 requests to simulate; decisions.csv would hold about \
                 180,000,000 rows (6 algorithms), about 11 GB"
            ),
            "{warning}"
        );
        assert_eq!(
            size_warning(&s, false),
            None,
            "without decisions.csv it is ordinary"
        );
        let line = validation_summary(Path::new("modest.toml"), &s);
        assert!(
            line.contains("\nwarning: modest.toml: about 30,000,000 requests"),
            "{line}"
        );
        // 3 M requests on one algorithm: about 0.2 GB, below the line.
        let small_file = modest
            .replace("rate = 10000.0", "rate = 1000.0")
            .replace("[\"all\"]", "[\"gcra\"]");
        assert_eq!(size_warning(&scenario(&small_file), true), None);
    }

    #[test]
    fn validation_summary_names_sources_algorithms_client_and_limit() {
        let line = validation_summary(Path::new("small.toml"), &scenario(SMALL));
        assert_eq!(
            line,
            "ok: small.toml (small: 1 traffic source, 2 algorithms, open client, limit 5/10s)\n"
        );
    }

    #[test]
    fn a_run_shorter_than_two_windows_of_the_new_limit_is_flagged() {
        let s = scenario(SMALL);
        let long = Rule::new(5, crate::Nanos::from_secs(6)).unwrap();
        let warning = short_run_warning(&s, long).expect("10 s is under two 6 s windows");
        assert!(
            warning.starts_with("small: the run lasts 10s, less than two windows of --limit 5/6s"),
            "{warning}"
        );
        let short = Rule::new(5, crate::Nanos::from_secs(5)).unwrap();
        assert_eq!(short_run_warning(&s, short), None);
    }
}
