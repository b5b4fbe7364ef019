//! Charts read back from a real run's decisions.csv: the boundary zoom (one client's
//! decisions either side of the worst window edge) and the one-client timeline.

use std::path::Path;

use ratesim::report::charts::render_zoom_rgb;
use ratesim::report::run::{client_timeline_chart, zoom_chart};
use ratesim::report::{DecisionParts, TimelineMarks, ZoomMark};
use ratesim::sim::{self, DecisionSink, RunOptions, RunReport, Scenario};
use ratesim::{Registry, bundled};

fn run_burst(dir: &Path) -> RunReport {
    run_bundled(dir, "burst.toml")
}

fn run_bundled(dir: &Path, name: &str) -> RunReport {
    let registry = Registry::default();
    let text = bundled::scenario(name).expect("the scenario is bundled");
    let scenario = Scenario::parse_with(text, Path::new(name), &registry).unwrap();
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
            node: None,
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

/// In a deployment each mark carries the server that decided it, as decisions.csv's
/// `node` column says, and the chart draws it (issue 31, item 6).
#[test]
fn in_a_deployment_the_zoom_names_the_server_of_each_decision() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_bundled(dir.path(), "nodes_synced.toml");
    let nodes = run.deployment.as_ref().expect("a deployment").nodes;
    let chart = zoom_chart(&run, &dir.path().join("decisions.csv")).unwrap();
    assert!(chart.x_desc.contains("server"), "{}", chart.x_desc);
    let marks: Vec<&ZoomMark> = chart.lanes.iter().flat_map(|l| &l.marks).collect();
    assert!(!marks.is_empty());
    let servers: std::collections::BTreeSet<u32> =
        marks.iter().map(|m| m.node.expect("a server")).collect();
    assert!(servers.iter().all(|&n| n < nodes), "{servers:?}");
    assert!(servers.len() > 1, "round robin spreads them: {servers:?}");
    let drawn = render_zoom_rgb(&chart).unwrap();
    let mut unnamed = chart.clone();
    for lane in &mut unnamed.lanes {
        for m in &mut lane.marks {
            m.node = None;
        }
    }
    let plain = render_zoom_rgb(&unnamed).unwrap();
    assert_ne!(drawn.pixels, plain.pixels, "the server numbers are drawn");
}

#[test]
fn with_several_clients_the_timeline_shows_the_client_each_lane_names() {
    let registry = Registry::default();
    let text = r#"
        name = "three"
        duration = "30s"
        algorithms = ["fixed_window", "sliding_window_log"]
        [limit]
        max_requests = 5
        window = "10s"
        [[traffic]]
        kind = "poisson"
        rate = 3
        keys = 3
    "#;
    let scenario = Scenario::parse_with(text, Path::new("three.toml"), &registry).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut parts = DecisionParts::new(dir.path());
    let options = RunOptions {
        registry: &registry,
        ..RunOptions::default()
    };
    let mut sinks = |_: &str| -> std::io::Result<Box<dyn DecisionSink>> { parts.sink() };
    let run = sim::run(&scenario, &options, &mut sinks).unwrap();
    let decisions = parts.finish().unwrap();
    assert!(ratesim::report::client_timeline::has_many_clients(&run));
    let chart = client_timeline_chart(&run, &decisions).unwrap();
    let csv = std::fs::read_to_string(&decisions).unwrap();
    for (lane, a) in chart.lanes.iter().zip(&run.algorithms) {
        let key = a.window_key.as_deref().unwrap();
        assert_eq!(lane.algorithm, format!("{} · {key}", a.name));
        let rows = csv
            .lines()
            .filter(|l| l.starts_with(&format!("{},", a.name)) && l.contains(&format!(",{key},")))
            .count();
        let TimelineMarks::Points(points) = &lane.marks else {
            panic!("a few dozen decisions are ticks");
        };
        // One tick per non-empty bucket and decision kind: never more than the rows.
        assert!(
            !points.is_empty() && points.len() <= rows,
            "{} of {rows}",
            points.len()
        );
        let all = a
            .timeline
            .allowed
            .iter()
            .chain(&a.timeline.denied)
            .sum::<u64>() as usize;
        assert!(rows < all, "one client's rows, not all {all}");
    }
}

#[test]
fn the_zoom_as_svg_names_the_nanosecond_and_every_count_as_text() {
    use ratesim::report::charts::{AnyChart, render_svg_string};
    let dir = tempfile::tempdir().unwrap();
    let run = run_burst(dir.path());
    let chart = zoom_chart(&run, &dir.path().join("decisions.csv")).unwrap();
    let svg = render_svg_string(AnyChart::Zoom(&chart)).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split('>').nth(1))
        .map(|t| t.split('<').next().unwrap().trim())
        .collect();
    for label in [
        "−1 ns",
        "0",
        "10",
        "fixed_window: here 10 admitted, 0 denied; its most: 10 in one window = 2.00× the \
         limit, reached here",
    ] {
        assert!(texts.contains(&label), "{label} not in {texts:?}");
    }
}

/// Writes three frames of the burst's animation as PNGs to look at:
/// `cargo test --test report_zoom -- --ignored`
#[test]
#[ignore = "writes files outside the test's temporary directory"]
fn write_animation_frames_for_viewing() {
    use plotters::prelude::*;
    use ratesim::report::charts::{draw_frame, register_fonts};
    use ratesim::report::run::slide_animation;
    register_fonts().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = run_burst(dir.path());
    let animation = slide_animation(&run).unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let edge = animation.edge_ns;
    for (name, t) in [
        ("before", edge - 1),
        ("edge", edge),
        ("later", edge + 5_000_000_000),
    ] {
        let path = out.join(format!("slide_{name}.png"));
        let root = BitMapBackend::new(&path, (1200, 560)).into_drawing_area();
        draw_frame(&animation, t, &root).unwrap();
        root.present().unwrap();
        println!("{}", path.display());
    }
}

#[test]
fn the_fixed_windows_own_counter_restarts_at_the_boundary_beside_the_true_count() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_burst(dir.path());
    let chart = zoom_chart(&run, &dir.path().join("decisions.csv")).unwrap();
    let fixed = chart
        .lanes
        .iter()
        .find(|l| l.algorithm == "fixed_window")
        .unwrap();
    // Five at −1 ns count in the window [0, 10 s), five at 0 in [10 s, 20 s): the
    // algorithm's own counter reads 1…5 twice while the true count climbs to 10.
    let counter = fixed.counter.clone().expect("the fixed window's counter");
    assert_eq!(counter, [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]);
    let others = chart.lanes.iter().filter(|l| l.algorithm != "fixed_window");
    assert!(others.into_iter().all(|l| l.counter.is_none()));
    let legend = chart.counter_legend.as_deref().unwrap_or("");
    assert!(legend.contains("restarts at 0"), "{legend:?}");
    // Each panel's caption carries the summary's figure for its algorithm.
    let peak = fixed.peak.as_ref().expect("the summary's figure");
    assert_eq!((peak.count, peak.key.as_deref()), (10, Some("client-0")));
    // Drawn: the line's blue is in the picture, and only because of the counter.
    let blue = |chart: &ratesim::report::ZoomChart| {
        let image = render_zoom_rgb(chart).unwrap();
        image
            .pixels
            .chunks(3)
            .filter(|p| p == &[0, 114, 178])
            .count()
    };
    let mut without = chart.clone();
    without.counter_legend = None;
    for lane in &mut without.lanes {
        lane.counter = None;
    }
    let (with, none) = (blue(&chart), blue(&without));
    assert!(
        with > 200 && none == 0,
        "blue pixels: {with} with the counter, {none} without"
    );
}
