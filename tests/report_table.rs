//! The terminal summary table: content, highlighting and determinism.

use ratesim::report::summary::SummaryRow;
use ratesim::report::table::{TableOptions, render_summary_table};

const ALGORITHMS: [&str; 6] = [
    "token_bucket",
    "leaky_bucket",
    "fixed_window",
    "sliding_window_log",
    "sliding_window_counter",
    "gcra",
];

fn rows() -> Vec<SummaryRow> {
    ALGORITHMS
        .iter()
        .map(|&name| {
            let max = if name == "fixed_window" { 10 } else { 5 };
            let mut row = SummaryRow::new(name, 30 + max, 90 - max, max, 5);
            row.excess = if name == "fixed_window" { 25 } else { 0 };
            if name != "sliding_window_log" {
                row.false_allow = Some(max - 5);
                row.false_deny = Some(0);
            }
            row.retry_exact = Some(80);
            row.retry_early = Some(0);
            row.retry_late = Some(if name == "fixed_window" { 5 } else { 0 });
            row
        })
        .collect()
}

#[test]
fn the_table_names_every_algorithm_and_shows_the_key_numbers() {
    let text = render_summary_table(&rows(), TableOptions::plain());
    for name in ALGORITHMS {
        assert!(text.contains(name), "{name} missing in\n{text}");
    }
    assert!(text.contains("10 / 5"), "{text}");
    assert!(text.contains("2.00×"), "{text}");
    assert!(text.contains("1.00×"), "{text}");
    assert!(text.contains("admission"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains("fixed_window")).count(),
        1
    );
}

#[test]
fn plain_output_has_no_escape_codes_and_is_deterministic() {
    let a = render_summary_table(&rows(), TableOptions::plain());
    let b = render_summary_table(&rows(), TableOptions::plain());
    assert_eq!(a, b);
    assert!(
        !a.contains('\u{1b}'),
        "no ANSI escapes without colour:\n{a}"
    );
}

#[test]
fn over_admission_is_highlighted_only_when_colour_is_on() {
    let colored = render_summary_table(
        &rows(),
        TableOptions {
            color: true,
            width: None,
        },
    );
    let fixed = colored
        .lines()
        .find(|l| l.contains("fixed_window"))
        .unwrap();
    assert!(
        fixed.contains('\u{1b}'),
        "fixed_window row is highlighted: {fixed:?}"
    );
    for name in ["sliding_window_log", "gcra", "token_bucket"] {
        let line = colored.lines().find(|l| l.contains(name)).unwrap();
        assert!(
            !line.contains('\u{1b}'),
            "{name} must not be highlighted: {line:?}"
        );
    }
}

#[test]
fn a_narrow_width_wraps_instead_of_squeezing_to_nothing() {
    let text = render_summary_table(
        &rows(),
        TableOptions {
            color: false,
            width: Some(0),
        },
    );
    for name in ["gcra", "fixed_window"] {
        assert!(text.contains(name), "{name} in\n{text}");
    }
}

#[test]
fn degenerate_rows_render_without_panicking() {
    let mut weird = SummaryRow::new("", 0, 0, 0, 0);
    weird.over_admission = f64::NAN;
    let huge = SummaryRow::new("huge", u64::MAX, u64::MAX, u64::MAX, 1);
    let text = render_summary_table(&[weird, huge], TableOptions::plain());
    assert!(text.contains("n/a"), "{text}");
    assert!(text.contains(&u64::MAX.to_string()), "{text}");
    let empty = render_summary_table(&[], TableOptions::plain());
    assert!(empty.contains("algorithm"));
}

#[test]
#[ignore = "prints the table for a human to look at"]
fn show_table() {
    println!("{}", render_summary_table(&rows(), TableOptions::plain()));
    println!(
        "{}",
        render_summary_table(
            &rows(),
            TableOptions {
                color: false,
                width: Some(80)
            }
        )
    );
}

#[test]
fn algorithm_names_never_wrap_in_a_terminal_wide_enough_for_the_table() {
    let mut all = rows();
    all.push(SummaryRow::new(
        "sliding_window_counter",
        1_234_567,
        7_654_321,
        115,
        100,
    ));
    let options = TableOptions {
        color: false,
        width: Some(160),
    };
    let table = render_summary_table(&all, options);
    assert!(table.contains("sliding_window_counter"), "{table}");
}
