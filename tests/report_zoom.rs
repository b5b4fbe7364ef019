//! The boundary zoom: one client's decisions either side of the worst window edge,
//! read back from a real run's decisions.csv.

use std::path::Path;

use ratesim::report::charts::render_zoom_rgb;
use ratesim::report::run::zoom_chart;
use ratesim::report::{DecisionParts, ZoomMark};
use ratesim::sim::{self, DecisionSink, RunOptions, RunReport, Scenario};
use ratesim::{Registry, bundled};

fn run_burst(dir: &Path) -> RunReport {
    let registry = Registry::default();
    let text = bundled::scenario("burst.toml").expect("burst.toml is bundled");
    let scenario = Scenario::parse_with(text, Path::new("burst.toml"), &registry).unwrap();
    let mut parts = DecisionParts::new(dir);
    let options = RunOptions {
        registry: &registry,
        ..RunOptions::default()
    };
    let mut sinks = |_: &str| -> std::io::Result<Box<dyn DecisionSink>> { parts.sink() };
    let run = sim::run(&scenario, &options, &mut sinks).unwrap();
    parts.finish().unwrap();
    run
}

#[test]
fn the_zoom_shows_the_fixed_windows_ten_admissions_within_one_nanosecond() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_burst(dir.path());
    let chart = zoom_chart(&run, &dir.path().join("decisions.csv")).unwrap();
    assert!(chart.title.contains("10 s boundary"), "{}", chart.title);
    assert!(
        chart.x_desc.starts_with("client-0's requests"),
        "{}",
        chart.x_desc
    );
    let fixed = chart
        .lanes
        .iter()
        .find(|l| l.algorithm == "fixed_window")
        .unwrap();
    let expected: Vec<ZoomMark> = (1..=10)
        .map(|count| ZoomMark {
            offset_ns: if count <= 5 { -1 } else { 0 },
            allowed: true,
            count,
        })
        .collect();
    assert_eq!(fixed.marks, expected, "every request its own mark, exact");
    let log = chart
        .lanes
        .iter()
        .find(|l| l.algorithm == "sliding_window_log")
        .unwrap();
    let denied: Vec<bool> = log.marks.iter().map(|m| !m.allowed).collect();
    assert_eq!(
        denied,
        [[false; 5], [true; 5]].concat(),
        "the log denies after the edge"
    );
    let image = render_zoom_rgb(&chart).unwrap();
    assert_eq!(image.width, 1200);
}
