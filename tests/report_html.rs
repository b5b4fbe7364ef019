//! report.html: self-contained (no external URL, no script), well formed, escaped, and
//! saying in words what the burst lesson's numbers mean.

use std::path::Path;

use ratesim::report::html::render_html;
use ratesim::report::{self, DecisionParts, WriteOptions};
use ratesim::sim::{self, DecisionSink, RunOptions, RunReport, Scenario};
use ratesim::{Registry, bundled};

fn run_burst(dir: &Path, registry: &Registry) -> RunReport {
    let text = bundled::scenario("burst.toml").expect("burst.toml is bundled");
    let scenario = Scenario::parse_with(text, Path::new("burst.toml"), registry).unwrap();
    let mut parts = DecisionParts::new(dir);
    let options = RunOptions {
        registry,
        ..RunOptions::default()
    };
    let mut sinks = |_: &str| -> std::io::Result<Box<dyn DecisionSink>> { parts.sink() };
    let run = sim::run(&scenario, &options, &mut sinks).unwrap();
    parts.finish().unwrap();
    run
}

/// The names of a page's tags in order, `/name` for closing ones, comments and the
/// doctype skipped; panics on a `<` that opens no tag.
fn tags(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        rest = &rest[start + 1..];
        let end = rest.find('>').expect("every tag closes");
        let inner = &rest[..end];
        rest = &rest[end + 1..];
        if inner.starts_with('!') {
            continue;
        }
        let name: String = inner
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '/')
            .collect();
        assert!(
            !name.is_empty() && name != "/",
            "a bare `<` in the text: {inner}"
        );
        out.push(name.to_ascii_lowercase());
    }
    out
}

/// Every opened element is closed, in order (void elements need no end tag).
fn assert_balanced(html: &str) {
    const VOID: [&str; 4] = ["meta", "img", "br", "hr"];
    let mut open: Vec<String> = Vec::new();
    for tag in tags(html) {
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name), "stack {open:?}");
        } else if !VOID.contains(&tag.as_str()) {
            open.push(tag);
        }
    }
    assert!(open.is_empty(), "never closed: {open:?}");
}

#[test]
fn the_report_is_one_self_contained_well_formed_page_with_every_chart() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    let run = run_burst(dir.path(), &registry);
    let decisions = dir.path().join("decisions.csv");
    let options = WriteOptions {
        charts: true,
        registry: &registry,
        metadata: None,
        decisions: Some(&decisions),
        chart_format: Default::default(),
    };
    let written = report::write_run(&run, dir.path(), options).unwrap();
    let path = dir.path().join(report::REPORT_HTML);
    assert!(written.contains(&path), "{written:?}");
    let html = std::fs::read_to_string(&path).unwrap();

    assert_balanced(&html);
    let lower = html.to_ascii_lowercase();
    for external in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href=\"//",
        "src=\"//",
    ] {
        assert!(!lower.contains(external), "fetches {external}");
    }
    assert!(!lower.contains("<script"), "readable without JavaScript");
    assert!(!lower.contains("<link"), "no external stylesheet");
    let images = html.matches("<img src=\"data:image/png;base64,").count();
    assert_eq!(images, 4, "timeline, zoom, window counts, over-admission");
    assert!(html.contains("<h1>burst</h1>"));
    assert!(
        html.contains("The boundary-burst lesson"),
        "the description"
    );
    assert!(
        html.contains(
            "<b>fixed_window</b>: admitted 10 requests from client-0 within 1 ns across a \
             window boundary — 2.00× the limit of 5"
        ),
        "the sentence"
    );
    assert!(
        html.contains("<td class=\"over\">2.00×</td>"),
        "the table marks it"
    );
}

#[test]
fn text_from_the_scenario_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = run_burst(dir.path(), &Registry::default());
    run.scenario = "a<b & \"c\"".to_string();
    run.description = "<script>alert(1)</script>".to_string();
    let html = render_html(&run, &["x<y: z & w".to_string()], &[]).unwrap();
    assert_balanced(&html);
    assert!(
        html.contains("<h1>a&lt;b &amp; &quot;c&quot;</h1>"),
        "{html}"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<script>"));
    assert!(html.contains("<li><b>x&lt;y</b>: z &amp; w</li>"));
}

#[test]
fn a_deployment_report_says_where_the_limit_ran() {
    let registry = Registry::default();
    let text = bundled::scenario("nodes_local.toml").expect("nodes_local.toml is bundled");
    let scenario = Scenario::parse_with(text, Path::new("nodes_local.toml"), &registry).unwrap();
    let options = RunOptions {
        registry: &registry,
        ..RunOptions::default()
    };
    let mut sinks =
        |_: &str| -> std::io::Result<Box<dyn DecisionSink>> { Ok(Box::new(sim::NoopSink)) };
    let run = sim::run(&scenario, &options, &mut sinks).unwrap();
    let html = render_html(&run, &[], &[]).unwrap();
    assert_balanced(&html);
    let servers = run.deployment.as_ref().expect("a deployment").nodes;
    let phrase = format!("on {servers} servers (store = local, balancer = round_robin)");
    assert!(html.contains(&phrase), "{phrase} not in:\n{html}");
    let one_server = render_html(
        &run_burst(tempfile::tempdir().unwrap().path(), &registry),
        &[],
        &[],
    )
    .unwrap();
    assert!(
        !one_server.contains(" servers ("),
        "one server says nothing of servers"
    );
}
