//! The results of the two analyses that need no scenario: the `worst-case` table and
//! the files that replay each worst case, and the `calibrate` table.
//!
//! Glue like [`run`](super::run): it reads finished [`WorstCase`]s and
//! [`Calibration`]s. It must not search or calibrate, and it never prints: tables come
//! back as text for the caller to place.

use std::path::{Path, PathBuf};

use super::output::{OutputError, write_text};
use super::summary::format_ratio;
use super::table::{TableOptions, render_rows};
use crate::rule::Rule;
use crate::sim::calibrate::Calibration;
use crate::sim::worst_case::{self, WorstCase};

/// The most each algorithm was made to admit in one window of `rule`, beside its
/// analytic bound and whether the search reached, stayed below or exceeded it; under a
/// heading that names the window, the limit and the burst.
pub fn render_worst_cases(rule: &Rule, cases: &[WorstCase], options: TableOptions) -> String {
    let rows: Vec<Vec<String>> = cases
        .iter()
        .map(|c| {
            let analytic = c
                .analytic
                .map_or_else(|| "?".to_string(), |a| a.to_string());
            vec![
                c.algorithm.clone(),
                analytic,
                c.max_in_window.to_string(),
                format_ratio(c.over_admission),
                verdict(c).to_string(),
            ]
        })
        .collect();
    let headers = ["algorithm", "analytic bound", "found", "÷ limit", "bound"];
    format!(
        "Most admitted in any window of {} (limit {}, burst {}):\n{}\n",
        rule.window(),
        rule.max_requests(),
        rule.burst(),
        render_rows(&headers, &rows, options)
    )
}

/// How the count found compares with the analytic bound (empty when there is none).
fn verdict(case: &WorstCase) -> &'static str {
    match case.analytic {
        Some(a) if case.max_in_window == a => "reached",
        Some(a) if case.max_in_window > a => "EXCEEDED",
        Some(_) => "below",
        None => "",
    }
}

/// Writes `case`'s winning stream into `dir` as `<algorithm>.csv` (a replayable trace)
/// and `<algorithm>.toml` (a scenario replaying it under `rule`); returns both paths,
/// in that order.
pub fn write_worst_case(
    dir: &Path,
    case: &WorstCase,
    rule: &Rule,
) -> Result<[PathBuf; 2], OutputError> {
    let trace_file = format!("{}.csv", case.algorithm);
    let trace = write_text(&dir.join(&trace_file), &worst_case::trace_csv(case))?;
    let scenario = worst_case::replay_scenario(case, rule, &trace_file);
    let scenario = write_text(&dir.join(format!("{}.toml", case.algorithm)), &scenario)?;
    Ok([trace, scenario])
}

/// What `rule` admits in one window with each algorithm (worst case, Poisson traffic at
/// one and two times the limit rate) and the strict setting that never exceeds its
/// `max_requests`, under a heading that says so.
pub fn render_calibrations(rule: &Rule, rows: &[Calibration], options: TableOptions) -> String {
    let opt = |v: Option<u64>| v.map_or_else(|| "–".to_string(), |n| n.to_string());
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|c| {
            vec![
                c.algorithm.clone(),
                format!("{} (analytic {})", c.nominal_worst, opt(c.nominal_analytic)),
                c.poisson_1x.to_string(),
                c.poisson_2x.to_string(),
                if c.strict.is_empty() {
                    "none exists".to_string()
                } else {
                    c.strict.clone()
                },
                opt(c.strict_worst),
            ]
        })
        .collect();
    let headers = [
        "algorithm",
        "nominal: worst case",
        "Poisson 1×",
        "Poisson 2×",
        "strict setting",
        "strict: worst case",
    ];
    format!(
        "What {rule} admits in one window (most requests of one client), and a setting that never exceeds {}:\n{}\n",
        rule.max_requests(),
        render_rows(&headers, &cells, options)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn case(algorithm: &str, analytic: Option<u64>, found: u64) -> WorstCase {
        WorstCase {
            algorithm: algorithm.to_string(),
            analytic,
            max_in_window: found,
            over_admission: found as f64 / 5.0,
            stream: vec![(Nanos::ZERO, 1)],
        }
    }

    #[test]
    fn the_worst_case_table_says_whether_each_bound_was_reached() {
        let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
        let cases = [
            case("fixed_window", Some(10), 10),
            case("gcra", Some(9), 8),
            case("leaky", Some(5), 6),
            case("mystery", None, 7),
        ];
        let text = render_worst_cases(&rule, &cases, TableOptions::plain());
        assert!(
            text.starts_with("Most admitted in any window of 10s (limit 5, burst 5):\n"),
            "{text}"
        );
        let verdicts: Vec<&str> = cases.iter().map(verdict).collect();
        assert_eq!(verdicts, ["reached", "below", "EXCEEDED", ""]);
        for word in ["reached", "below", "EXCEEDED", "mystery"] {
            assert!(text.contains(word), "{word} missing from\n{text}");
        }
    }

    #[test]
    fn a_calibration_without_a_strict_setting_says_none_exists() {
        let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
        let row = Calibration {
            algorithm: "fixed_window".to_string(),
            limit: 5,
            window_ns: 1_000_000_000,
            nominal_analytic: None,
            nominal_worst: 10,
            poisson_1x: 6,
            poisson_2x: 8,
            strict: String::new(),
            strict_max_requests: None,
            strict_burst: None,
            strict_worst: None,
        };
        let text = render_calibrations(&rule, &[row], TableOptions::plain());
        assert!(text.contains("none exists"), "{text}");
        assert!(text.contains("10 (analytic –)"), "{text}");
    }

    #[test]
    fn a_worst_case_is_written_as_a_trace_and_a_scenario_that_replays_it() {
        let dir = tempfile::tempdir().unwrap();
        let rule = Rule::new(5, Nanos::from_secs(10)).unwrap();
        let c = case("gcra", Some(9), 1);
        let [trace, scenario] = write_worst_case(dir.path(), &c, &rule).unwrap();
        assert_eq!(trace, dir.path().join("gcra.csv"));
        assert_eq!(scenario, dir.path().join("gcra.toml"));
        let text = std::fs::read_to_string(&trace).unwrap();
        assert_eq!(text, worst_case::trace_csv(&c));
        let toml = std::fs::read_to_string(&scenario).unwrap();
        assert_eq!(toml, worst_case::replay_scenario(&c, &rule, "gcra.csv"));
    }
}
