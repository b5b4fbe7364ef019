//! From one simulator run to its files: `decisions.csv` (streamed while the engine
//! runs), `window_counts.csv`, `summary.csv`/`summary.json`, the charts and
//! `report.html`.
//!
//! This is the glue between `sim`'s results and the pure writers and renderers of this
//! layer. It reads a finished [`RunReport`]; it never drives the engine.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::charts::{
    AnyChart, ChartError, ChartFormat, OverAdmissionChart, WindowCountChart, WindowCountSeries,
    ZoomChart, render_chart,
};
use super::client_timeline;
pub use super::client_timeline::client_timeline_chart;
use super::csvout::{DecisionCsvWriter, WindowCountRecord, WindowCountsCsvWriter, write_summary};
use super::html::{self, Figure};
use super::metadata::{RunMetadata, write_run_json};
use super::output::{AtomicFile, OutputError, TempPath};
use super::views::{human_duration, secs};
pub use super::views::{summary_rows, timeline_chart};
pub use super::zoom::{slide_animation, zoom_chart};
use crate::registry::Registry;
use crate::sim::{AlgorithmReport, DecisionRow, DecisionSink, RunReport};
use crate::time::Nanos;

/// Why writing a run's outputs failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A CSV or JSON file.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A chart.
    #[error(transparent)]
    Chart(#[from] ChartError),
}

/// `decisions.csv`, assembled from one part file per algorithm.
///
/// The engine may run algorithms on several threads; each writes its own part (so
/// rows never interleave), and [`DecisionParts::finish`] concatenates the parts in
/// algorithm order under one header, atomically. Parts are hidden temporary files,
/// removed however the run ends.
#[derive(Debug)]
pub struct DecisionParts {
    dir: PathBuf,
    parts: Vec<TempPath>,
}

struct PartSink {
    writer: Option<DecisionCsvWriter<BufWriter<File>>>,
}

impl DecisionSink for PartSink {
    fn record(&mut self, row: &DecisionRow<'_>) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.write(row).map_err(io::Error::other),
            None => Err(io::Error::other("decision part written after finish")),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        match self.writer.take() {
            Some(w) => w.into_inner().map_err(io::Error::other)?.flush(),
            None => Ok(()),
        }
    }
}

impl DecisionParts {
    /// Parts for `decisions.csv` in `dir` (which must exist).
    pub fn new(dir: &Path) -> DecisionParts {
        DecisionParts {
            dir: dir.to_path_buf(),
            parts: Vec::new(),
        }
    }

    /// A sink for the next algorithm's decisions (call once per algorithm, in order).
    pub fn sink(&mut self) -> io::Result<Box<dyn DecisionSink>> {
        let name = format!("decisions.part{}.csv", self.parts.len());
        let part = TempPath::new(&self.dir.join(name)).map_err(io::Error::other)?;
        let file = File::create(part.temp_path())?;
        let writer = DecisionCsvWriter::from_writer(BufWriter::with_capacity(1 << 16, file))
            .map_err(io::Error::other)?;
        self.parts.push(part);
        Ok(Box::new(PartSink {
            writer: Some(writer),
        }))
    }

    /// Concatenates the parts into `decisions.csv` (one header) and removes them.
    pub fn finish(self) -> Result<PathBuf, OutputError> {
        let path = self.dir.join(super::DECISIONS_CSV);
        let mut out = AtomicFile::create(&path)?;
        let write_error = |source| OutputError::Write {
            path: path.clone(),
            source,
        };
        for (i, part) in self.parts.iter().enumerate() {
            let mut reader = BufReader::new(File::open(part.temp_path()).map_err(write_error)?);
            let mut header = String::new();
            reader.read_line(&mut header).map_err(write_error)?;
            if i == 0 {
                out.write_all(header.as_bytes()).map_err(write_error)?;
            }
            io::copy(&mut reader, &mut out).map_err(write_error)?;
        }
        out.finish()
        // `self.parts` drops here and removes every part file.
    }
}

/// What [`write_run`] writes besides the CSV/JSON files.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions<'a> {
    /// Render the charts.
    pub charts: bool,
    /// The registry the run's algorithms came from: their order there picks their
    /// colours in the charts.
    pub registry: &'a Registry,
    /// What produced the run, written last as `run.json` (so its presence marks a
    /// finished folder); `None` writes none.
    pub metadata: Option<&'a RunMetadata>,
    /// This run's `decisions.csv`, if it wrote one: the boundary zoom is read back
    /// from it (no zoom without it).
    pub decisions: Option<&'a Path>,
    /// PNG (the default) or SVG charts.
    pub chart_format: ChartFormat,
}

/// Writes `window_counts.csv`, `summary.csv`, `summary.json`, (optionally) the charts
/// and `run.json` for `report` into `dir`; returns the paths written, in that order.
pub fn write_run(
    report: &RunReport,
    dir: &Path,
    options: WriteOptions<'_>,
) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = vec![write_window_counts(report, dir)?];
    // One row per algorithm, or per algorithm and rule with several `[[limit]]`s.
    let metrics: Vec<_> = report
        .algorithms
        .iter()
        .flat_map(|a| a.metrics.rule_rows())
        .collect();
    let (csv, json) = write_summary(dir, &metrics)?;
    written.extend([csv, json]);
    let zoom = options
        .decisions
        .map(|decisions| zoom_chart(report, decisions))
        .transpose()?;
    let mut figures = Vec::new();
    if report.algorithms.iter().any(|a| !a.nodes.is_empty()) {
        written.push(write_nodes(report, dir)?);
    }
    if options.charts {
        figures = write_charts(report, dir, &options, zoom.as_ref())?;
        written.extend(figures.iter().map(|f| f.path.clone()));
    }
    let lanes = zoom.map(|z| z.lanes).unwrap_or_default();
    let sentences = html::sentences(report, &lanes);
    written.push(html::write_html(dir, report, &sentences, &figures)?);
    if let Some(meta) = options.metadata {
        written.push(write_run_json(dir, meta)?);
    }
    Ok(written)
}

/// Renders the charts into `dir`, each with the caption the HTML report gives it.
fn write_charts(
    report: &RunReport,
    dir: &Path,
    options: &WriteOptions<'_>,
    zoom: Option<&ZoomChart>,
) -> Result<Vec<Figure>, ReportError> {
    let figure = |path, caption: &str| Figure {
        path,
        caption: caption.to_string(),
    };
    let one_client = match options.decisions {
        Some(d) if client_timeline::has_many_clients(report) => {
            Some(client_timeline_chart(report, d)?)
        }
        _ => None,
    };
    let caption = match one_client {
        Some(_) => {
            "Decisions over time of the client each lane names (the one its window \
                    counts follow): admitted above, denied below."
        }
        None => "Every decision over time, one lane per algorithm: admitted above, denied below.",
    };
    let timeline = one_client.unwrap_or_else(|| timeline_chart(report));
    let format = options.chart_format;
    let render = |chart: AnyChart<'_>, name: &str| render_chart(chart, &dir.join(name), format);
    let mut figures = vec![figure(
        render(AnyChart::Timeline(&timeline), super::TIMELINE_PNG)?,
        caption,
    )];
    if let Some(zoom) = zoom {
        let counter = match zoom.counter_legend {
            Some(_) => "; the blue line is what the fixed window itself counts",
            None => "",
        };
        figures.push(figure(
            render(AnyChart::Zoom(zoom), super::TIMELINE_ZOOM_PNG)?,
            &format!(
                "The window edge where the worst over-admission happened, up close: each \
                 request is its own mark, at the height of the client's count in the \
                 trailing window{counter}."
            ),
        ));
    }
    figures.push(figure(
        render(
            AnyChart::WindowCounts(&window_count_chart(report, options.registry)),
            super::WINDOW_COUNTS_PNG,
        )?,
        "Admitted requests in the trailing window for the worst client, against the limit.",
    ));
    figures.push(figure(
        render(
            AnyChart::OverAdmission(&over_admission_chart(report)),
            super::OVER_ADMISSION_PNG,
        )?,
        "The most admitted in any window, as a multiple of the limit.",
    ));
    Ok(figures)
}

/// The files a run writes into its output directory that are in `dir` but were not
/// written by this run (`written`): left from an earlier run with other options, such
/// as the charts kept after a `--no-charts` run, or the PNGs beside this run's SVGs.
/// Listed so the caller can say so; never deleted. See [`super::stale`].
pub fn stale_outputs(dir: &Path, written: &[PathBuf]) -> Vec<PathBuf> {
    super::stale::stale_files(dir, &super::OUTPUT_FILES, written)
}

fn write_window_counts(report: &RunReport, dir: &Path) -> Result<PathBuf, OutputError> {
    let mut writer = WindowCountsCsvWriter::create(&dir.join(super::WINDOW_COUNTS_CSV))?;
    for a in &report.algorithms {
        for sample in &a.window_counts {
            writer.write(&WindowCountRecord {
                algorithm: &a.name,
                key: a.window_key.as_deref().unwrap_or_default(),
                time: sample.time,
                count: sample.count,
            })?;
        }
    }
    writer.finish()
}

/// One row of `nodes.csv`: what one node of a deployment decided for one algorithm.
#[derive(serde::Serialize)]
struct NodeRow<'a> {
    algorithm: &'a str,
    node: u32,
    /// Exact signed decimal seconds.
    clock_offset_s: String,
    attempts: u64,
    allowed: u64,
    denied: u64,
}

fn write_nodes(report: &RunReport, dir: &Path) -> Result<PathBuf, OutputError> {
    let rows: Vec<NodeRow<'_>> = report
        .algorithms
        .iter()
        .flat_map(|a| {
            a.nodes.iter().map(|n| NodeRow {
                algorithm: &a.name,
                node: n.node,
                clock_offset_s: signed_secs(n.clock_offset_ns),
                attempts: n.attempts,
                allowed: n.allowed,
                denied: n.denied,
            })
        })
        .collect();
    super::csvout::write_csv_rows(&dir.join(super::NODES_CSV), &rows)
}

/// Signed nanoseconds as exact decimal seconds: `-0.05`, `0`, `0.025`.
fn signed_secs(ns: i64) -> String {
    let secs = Nanos::new(ns.unsigned_abs()).to_decimal_secs();
    if ns < 0 { format!("-{secs}") } else { secs }
}

/// The worst key's trailing-window admitted count per algorithm, against the limit;
/// each algorithm coloured by its place in `registry` (one it does not hold, by its
/// place after the registry's).
pub fn window_count_chart(report: &RunReport, registry: &Registry) -> WindowCountChart {
    WindowCountChart {
        title: format!(
            "{}: admitted requests in the trailing {} window ({})",
            report.scenario,
            human_duration(report.rule.window),
            followed_clients(report)
        ),
        duration_s: secs(report.duration),
        window_s: Some(secs(report.rule.window)),
        limit: report.rule.max_requests,
        series: report
            .algorithms
            .iter()
            .enumerate()
            .map(|(i, a)| WindowCountSeries {
                algorithm: a.name.clone(),
                key: a.window_key.clone(),
                color_slot: registry
                    .position(&a.name)
                    .unwrap_or(registry.names().count() + i),
                points: a
                    .window_counts
                    .iter()
                    .map(|s| (secs(s.time), s.count))
                    .collect(),
            })
            .collect(),
    }
}

/// Which client the window-count panels follow, for the title: each algorithm's worst
/// one, or the one `--key` chose.
fn followed_clients(report: &RunReport) -> String {
    let worst = |a: &AlgorithmReport| a.window_key.is_none() || a.window_key == a.metrics.worst_key;
    let first = report.algorithms.first().and_then(|a| a.window_key.clone());
    match first {
        _ if report.algorithms.iter().all(worst) => "worst key".to_string(),
        Some(key)
            if report
                .algorithms
                .iter()
                .all(|a| a.window_key.as_ref() == Some(&key)) =>
        {
            format!("key {key}")
        }
        _ => "the key each panel names".to_string(),
    }
}

/// One bar per algorithm: the most admitted in any window, as a multiple of the limit.
pub fn over_admission_chart(report: &RunReport) -> OverAdmissionChart {
    OverAdmissionChart {
        title: format!(
            "{}: most admitted in any {} window ÷ limit ({})",
            report.scenario,
            human_duration(report.rule.window),
            report.rule.max_requests
        ),
        bars: report
            .algorithms
            .iter()
            .map(|a| (a.name.clone(), a.metrics.over_admission))
            .collect(),
    }
}
