//! The terminal summary table: content, highlighting and determinism.

use ratesim::Nanos;
use ratesim::report::summary::{RetryOutcome, SummaryRow};
use ratesim::report::table::{
    TableOptions, render_retry_outcomes, render_rows, render_summary_table,
};

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
    for width in [80, 100, 120] {
        println!("{width} columns:");
        println!("{}", render_summary_table(&poisson_rows(), at_width(width)));
    }
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

/// The rows `ratesim run scenarios/poisson.toml` prints (five-digit counts).
fn poisson_rows() -> Vec<SummaryRow> {
    let data = [
        ("token_bucket", 60637, 11035, 19, 31125, 14116, 3977),
        ("leaky_bucket", 60637, 11035, 19, 31125, 14116, 3977),
        ("fixed_window", 56604, 15068, 20, 22693, 13765, 7659),
        ("sliding_window_log", 50498, 21174, 10, 0, 0, 0),
        ("sliding_window_counter", 49618, 22054, 14, 3751, 8609, 9489),
        ("gcra", 60637, 11035, 19, 31125, 14116, 3977),
    ];
    data.iter()
        .map(|&(name, allowed, denied, max, excess, fa, fd)| {
            let mut row = SummaryRow::new(name, allowed, denied, max, 10);
            row.excess = excess;
            row.false_allow = Some(fa);
            row.false_deny = Some(fd);
            row.retry_exact = Some(denied);
            row.retry_early = Some(0);
            row.retry_late = Some(0);
            row
        })
        .collect()
}

fn at_width(width: u16) -> TableOptions {
    TableOptions {
        color: false,
        width: Some(width),
    }
}

/// The text of every line between the table's vertical bars, cell by cell.
fn cells_of(table: &str) -> Vec<String> {
    table
        .lines()
        .flat_map(|line| {
            line.split(['│', '┆'])
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty())
        .collect()
}

/// Fails unless every `whole` text is one cell line of `table` and every header word
/// appears whole in some header cell line.
fn assert_nothing_split(table: &str, whole: &[String], header_words: &[&str]) {
    let cells = cells_of(table);
    for text in whole {
        assert!(
            cells.iter().any(|c| c == text),
            "`{text}` is split or missing in\n{table}"
        );
    }
    for word in header_words {
        assert!(
            cells
                .iter()
                .any(|c| c.split_whitespace().any(|w| w == *word)),
            "header word `{word}` is broken in\n{table}"
        );
    }
}

#[test]
fn numbers_and_groups_are_never_split_at_any_terminal_width() {
    let rows = poisson_rows();
    let mut whole = Vec::new();
    for r in &rows {
        whole.push(r.algorithm.clone());
        whole.push(r.allowed.to_string());
        whole.push(r.denied.to_string());
        whole.push(format!("{} / {}", r.max_in_window, r.limit));
        whole.push(format!(
            "{}/{}",
            r.false_allow.unwrap(),
            r.false_deny.unwrap()
        ));
    }
    whole.push("84.6%".to_string());
    whole.push("1.90×".to_string());
    for width in [40, 60, 80, 100, 120, 160] {
        let table = render_summary_table(&rows, at_width(width));
        assert_nothing_split(
            &table,
            &whole,
            &[
                "allowed",
                "denied",
                "window",
                "admission",
                "excess",
                "sliding",
            ],
        );
    }
}

#[test]
fn caller_formatted_rows_keep_their_cells_whole_at_any_terminal_width() {
    let headers = [
        "algorithm",
        "nominal: worst case",
        "Poisson 1×",
        "Poisson 2×",
        "strict setting",
        "strict: worst case",
    ];
    let rows: Vec<Vec<String>> = ["token_bucket", "sliding_window_counter"]
        .iter()
        .map(|name| {
            [
                *name,
                "199 (analytic 199)",
                "134",
                "183",
                "51/60s (burst 50)",
                "100",
            ]
            .map(String::from)
            .to_vec()
        })
        .collect();
    let whole: Vec<String> = rows.iter().flatten().cloned().collect();
    for width in [40, 60, 80, 100, 120] {
        let table = render_rows(&headers, &rows, at_width(width));
        assert_nothing_split(
            &table,
            &whole,
            &["nominal:", "Poisson", "setting", "strict:"],
        );
    }
}

fn widest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn a_table_wider_than_the_terminal_is_split_into_tables_that_fit() {
    let rows = poisson_rows();
    for width in [60, 80] {
        let table = render_summary_table(&rows, at_width(width));
        assert!(
            widest_line(&table) <= usize::from(width),
            "wider than {width}:\n{table}"
        );
        // Every part repeats the algorithm names, so each row can still be read.
        let parts = table.matches("algorithm").count();
        assert!(parts >= 2, "{width} columns need two parts:\n{table}");
        assert_eq!(table.matches("sliding_window_counter").count(), parts);
    }
    let calibrate = render_rows(
        &["algorithm", "nominal: worst case", "strict setting"],
        &[vec![
            "sliding_window_counter".to_string(),
            "199 (analytic 199)".to_string(),
            "51/60s (burst 50)".to_string(),
        ]],
        at_width(60),
    );
    assert!(widest_line(&calibrate) <= 60, "{calibrate}");
}

#[test]
fn a_table_that_fits_stays_one_table() {
    let rows = poisson_rows();
    let table = render_summary_table(&rows, at_width(200));
    assert_eq!(table.matches("algorithm").count(), 1, "{table}");
    assert_eq!(
        render_summary_table(&rows, TableOptions::plain())
            .matches("algorithm")
            .count(),
        1
    );
}

#[test]
fn the_poisson_summary_fits_100_columns_in_one_table() {
    let rows = poisson_rows();
    let plain = render_summary_table(&rows, TableOptions::plain());
    assert!(widest_line(&plain) <= 100, "{plain}");
    let table = render_summary_table(&rows, at_width(100));
    assert_eq!(table.matches("algorithm").count(), 1, "{table}");
}

#[test]
fn retry_after_honesty_is_a_note_when_exact_everywhere_and_a_column_otherwise() {
    let exact = poisson_rows();
    let text = render_summary_table(&exact, TableOptions::plain());
    let table_lines = || text.lines().filter(|l| !l.starts_with("retry_after was"));
    assert!(
        !table_lines().any(|l| l.contains("retry_after")),
        "no retry_after column:\n{text}"
    );
    assert!(!text.contains("11035/0/0"), "no column of x/0/0:\n{text}");
    let total: u64 = exact.iter().map(|r| r.denied).sum();
    let note = text.lines().last().unwrap();
    assert_eq!(
        note,
        format!("retry_after was exact on all {total} denials checked (none early, none late)."),
        "{text}"
    );

    let mut inexact = poisson_rows();
    inexact[2].retry_exact = Some(15_000);
    inexact[2].retry_late = Some(68);
    let text = render_summary_table(&inexact, at_width(200));
    assert!(text.contains("15000/0/68"), "{text}");
    assert!(text.contains("11035/0/0"), "{text}");
    assert!(!text.contains("was exact"), "{text}");
    assert_nothing_split(&text, &[], &["retry_after", "exact", "early", "late"]);
}

#[test]
fn the_sliding_log_column_is_left_out_when_no_algorithm_was_compared() {
    let mut rows = poisson_rows();
    for row in &mut rows {
        row.false_allow = None;
        row.false_deny = None;
    }
    let text = render_summary_table(&rows, TableOptions::plain());
    assert!(!text.contains("sliding log"), "{text}");
    assert!(!text.contains('–'), "no column of dashes:\n{text}");
    assert!(render_summary_table(&poisson_rows(), TableOptions::plain()).contains("sliding log"));
}

#[test]
fn a_split_table_is_split_evenly_not_into_a_lone_last_column() {
    // Retry clients: no sliding-log column, so seven columns, 84 wide at the least.
    let mut rows = poisson_rows();
    for row in &mut rows {
        row.false_allow = None;
        row.false_deny = None;
    }
    let table = render_summary_table(&rows, at_width(80));
    let columns: Vec<usize> = table
        .lines()
        .filter(|l| l.starts_with("│ algorithm"))
        .map(|l| l.matches('┆').count())
        .collect();
    assert_eq!(
        columns,
        [3, 3],
        "two tables of three columns each:\n{table}"
    );
}

/// `ratesim run scenarios/retry_clients.toml`: no sliding-log comparison, and what
/// became of each of the 951 requests.
fn retry_rows() -> Vec<SummaryRow> {
    let data = [
        (
            "token_bucket",
            635,
            283,
            33,
            1185,
            1_140_850_687,
            5_905_580_031,
        ),
        (
            "fixed_window",
            598,
            181,
            172,
            940,
            6_308_233_215,
            29_527_900_159,
        ),
        (
            "sliding_window_log",
            594,
            321,
            36,
            1311,
            1_358_954_495,
            7_985_954_815,
        ),
    ];
    data.iter()
        .map(
            |&(name, succeeded, gave_up, unfinished, wasted, p50, p99)| {
                let mut row = SummaryRow::new(name, succeeded, 2000, 9, 5);
                row.retry = Some(RetryOutcome {
                    succeeded,
                    gave_up,
                    unfinished,
                    wasted_retries: wasted,
                    latency: (succeeded > 0).then(|| [p50, p99, p99 + 50_000_000].map(Nanos::new)),
                });
                row
            },
        )
        .collect()
}

#[test]
fn retry_outcomes_say_what_became_of_every_request() {
    let rows = retry_rows();
    let text = render_retry_outcomes(&rows, TableOptions::plain()).unwrap();
    assert!(
        text.starts_with(
            "Retry clients: what became of the 951 requests (latency: arrival to admission)\n"
        ),
        "{text}"
    );
    for whole in [
        "635/283/33",
        "598/181/172",
        "1185",
        "1.14s/5.91s/5.96s",
        "6.31s/29.5s/29.6s",
    ] {
        assert!(text.contains(whole), "{whole} in\n{text}");
    }
    assert_nothing_split(
        &render_retry_outcomes(&rows, at_width(60)).unwrap(),
        &["635/283/33".to_string(), "1.36s/7.99s/8.04s".to_string()],
        &["succeeded", "unfinished", "wasted", "latency", "p99"],
    );
    let open = poisson_rows();
    assert_eq!(render_retry_outcomes(&open, TableOptions::plain()), None);
}

#[test]
fn latency_is_a_dash_when_no_request_succeeded() {
    let mut rows = retry_rows();
    rows.truncate(1);
    rows[0].retry = Some(RetryOutcome {
        succeeded: 0,
        gave_up: 951,
        ..RetryOutcome::default()
    });
    let text = render_retry_outcomes(&rows, TableOptions::plain()).unwrap();
    assert!(text.contains("0/951/0"), "{text}");
    assert!(
        !text.contains("0ns"),
        "no latency without a success:\n{text}"
    );
    assert!(text.contains('–'), "{text}");
}

#[test]
fn requests_that_can_never_fit_get_a_note_under_the_table() {
    let mut rows = poisson_rows();
    assert!(!render_summary_table(&rows, TableOptions::plain()).contains("never"));
    for row in &mut rows {
        row.never_fits = 60;
    }
    let text = render_summary_table(&rows, TableOptions::plain());
    assert_eq!(
        text.lines().last().unwrap(),
        "60 requests cost more than the capacity (the limit, 10, or the burst for the \
         buckets and GCRA): no algorithm could ever admit them.",
        "{text}"
    );
    rows[0].never_fits = 0;
    let text = render_summary_table(&rows, at_width(80));
    assert!(widest_line(&text) <= 80, "the note wraps too:\n{text}");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.ends_with(
            "can never pass: leaky_bucket 60, fixed_window 60, sliding_window_log 60, \
             sliding_window_counter 60, gcra 60."
        ),
        "{text}"
    );
}

#[test]
fn ratesim_run_prints_retry_outcomes_and_why_requests_never_passed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.toml"),
        "name = \"t\"\nduration = \"10s\"\nalgorithms = [\"fixed_window\", \"gcra\"]\n\
         [limit]\nmax_requests = 5\nwindow = \"1s\"\n\
         [[traffic]]\nkind = \"trace\"\npath = \"trace.csv\"\n\
         [client]\nkind = \"retry\"\nmax_retries = 2\n",
    )
    .unwrap();
    // One request of cost 6 against a capacity of 5, then seven of cost 1 at once:
    // five pass, two are retried a second later and pass.
    let mut trace = String::from("time_s,key,cost\n0,a,6\n");
    trace.push_str(&"0,a,1\n".repeat(7));
    std::fs::write(dir.path().join("trace.csv"), trace).unwrap();
    let out = assert_cmd::Command::cargo_bin("ratesim")
        .unwrap()
        .current_dir(dir.path())
        .args(["run", "s.toml", "--quiet", "--no-charts", "--no-decisions"])
        .args(["--out", "o"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 request cost more than the capacity"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Retry clients: what became of the 8 requests (1 never fit)"),
        "{stdout}"
    );
    // The retry table comes last: its fixed_window row is the last one.
    let fixed = stdout
        .lines()
        .rfind(|l| l.contains("fixed_window"))
        .unwrap();
    assert!(fixed.contains("7/0/0"), "{fixed}");
}

/// `summary.csv`'s `allow_rate` is a fraction (0.545); the table shows a percentage, so
/// it must not use the same name: its column is headed `allowed %`.
#[test]
fn the_tables_percentage_column_is_not_named_like_the_csvs_fraction() {
    let text = render_summary_table(&rows(), TableOptions::plain());
    let header: Vec<&str> = text.lines().take_while(|l| !l.starts_with('╞')).collect();
    let cells = |line: &str| -> Vec<String> {
        line.trim_matches(['│', '┌', '└'])
            .split('┆')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let first = cells(header[1]);
    let second = cells(header[2]);
    let column = second.iter().position(|c| c == "%").expect(&text);
    assert_eq!(first[column], "allowed", "{text}");
    assert!(!text.contains("rate"), "{text}");
    let row = text.lines().find(|l| l.contains("token_bucket")).unwrap();
    assert_eq!(cells(row)[column], "29.2%", "{text}");
}
