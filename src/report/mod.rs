//! Report renderers: files, CSV, the terminal table, progress bars and PNG charts.
//!
//! Everything here is a pure function (or a streaming writer) over plain input structs
//! defined in this module tree: the report layer reads results, it must not drive or
//! depend on the simulator. A thin glue layer maps simulator results to these inputs.
//! Floats appear only here, at the display edge; times in CSV are exact decimals
//! from [`Nanos`](crate::Nanos).
//!
//! The order a run uses them in:
//!
//! 1. [`prepare_output_dir`] before any long work, so a bad `--out` fails at once;
//! 2. [`DecisionCsvWriter`] / [`WindowCountsCsvWriter`] streamed while the engine runs
//!    (each writes under a temporary name; `finish` renames it into place);
//! 3. [`write_summary`] with the runs' metrics, [`render_summary_table`] with [`SummaryRow`]s
//!    for stdout;
//! 4. [`render_timeline`], [`render_window_counts`], [`render_over_admission`].
//!
//! ```
//! use ratesim::Nanos;
//! use ratesim::report::{DecisionCsvWriter, DecisionRecord};
//!
//! let mut csv = DecisionCsvWriter::from_writer(Vec::new())?;
//! csv.write(&DecisionRecord {
//!     algorithm: "fixed_window",
//!     seq: 0,
//!     attempt: 0,
//!     time: Nanos::new(10_000_000_001),
//!     key: "user_1",
//!     cost: 1,
//!     allowed: false,
//!     remaining: 0,
//!     retry_after: Some(Nanos::from_millis(9_900)),
//!     delay: Nanos::ZERO,
//!     node: None,
//!     denied_by: Some("5/10s"),
//! })?;
//! let text = String::from_utf8(csv.into_inner()?)?;
//! assert_eq!(
//!     text,
//!     "algorithm,seq,time_s,key,cost,allowed,remaining,retry_after_s,attempt,delay_s,node,denied_by\n\
//!      fixed_window,0,10.000000001,user_1,1,false,0,9.9,0,0,,5/10s\n"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analysis;
pub mod charts;
pub mod client_timeline;
pub mod csvout;
pub mod details;
pub mod html;
pub mod listing;
pub mod metadata;
pub mod nodes;
pub mod output;
pub mod preflight;
pub mod progress;
pub mod readback;
pub mod run;
pub mod runs;
pub mod stale;
pub mod summary;
pub mod sweep;
pub mod table;
pub mod views;
pub mod zoom;

/// File name of the per-decision CSV.
pub const DECISIONS_CSV: &str = "decisions.csv";
/// File name of the trailing-window count CSV.
pub const WINDOW_COUNTS_CSV: &str = "window_counts.csv";
/// File name of the summary CSV.
pub const SUMMARY_CSV: &str = "summary.csv";
/// File name of the summary JSON (the same rows as [`SUMMARY_CSV`]).
pub const SUMMARY_JSON: &str = "summary.json";
/// File name of the timeline chart.
pub const TIMELINE_PNG: &str = "timeline.png";
/// File name of the boundary zoom: one client's decisions either side of the worst edge.
pub const TIMELINE_ZOOM_PNG: &str = "timeline_zoom.png";
/// File name of the animation `run --gif` writes: the trailing window sliding across
/// the worst window edge.
pub const WINDOW_SLIDE_GIF: &str = "window_slide.gif";
/// File name of the trailing-window count chart.
pub const WINDOW_COUNTS_PNG: &str = "window_counts.png";
/// File name of the over-admission bar chart.
pub const OVER_ADMISSION_PNG: &str = "over_admission.png";
/// File name of the self-contained HTML report (summary, sentences, every chart).
pub const REPORT_HTML: &str = "report.html";
/// File name of what produced the folder (scenario, limits, command line, version).
pub const RUN_JSON: &str = "run.json";
/// File name of `compare`'s over-admission matrix, beside the runs' folders.
pub const OVER_ADMISSION_MATRIX_CSV: &str = "over_admission_matrix.csv";
/// File name of `compare`'s over-admission matrix chart, beside the CSV.
pub const OVER_ADMISSION_MATRIX_PNG: &str = "over_admission_matrix.png";
/// File name of a deployment's per-node counts (only under a `[deployment]`).
pub const NODES_CSV: &str = "nodes.csv";
/// Every file a run writes into its output directory.
pub const OUTPUT_FILES: [&str; 12] = [
    DECISIONS_CSV,
    WINDOW_COUNTS_CSV,
    SUMMARY_CSV,
    SUMMARY_JSON,
    TIMELINE_PNG,
    TIMELINE_ZOOM_PNG,
    WINDOW_COUNTS_PNG,
    OVER_ADMISSION_PNG,
    REPORT_HTML,
    RUN_JSON,
    NODES_CSV,
    WINDOW_SLIDE_GIF,
];

pub use analysis::{render_calibrations, render_worst_cases, write_worst_case};
pub use charts::{
    ChartError, FrontierChart, FrontierPoint, OverAdmissionChart, TimelineBinner, TimelineBucket,
    TimelineChart, TimelineLane, TimelineMarks, TimelinePoint, WindowCountChart, WindowCountSeries,
    ZoomChart, ZoomLane, ZoomMark, register_fonts, render_over_admission, render_timeline,
    render_window_counts, render_zoom,
};
pub use csvout::{
    DecisionCsvWriter, DecisionRecord, WindowCountRecord, WindowCountsCsvWriter, csv_string,
    json_string, write_csv_rows, write_csv_rows_to, write_json, write_summary,
};
pub use listing::render_listing;
pub use metadata::{RunMetadata, ScenarioSource, write_run_json};
pub use nodes::{
    NodesComparison, OVER_ADMISSION_VS_NODES_CSV, OVER_ADMISSION_VS_NODES_PNG,
    write_nodes_comparison,
};
pub use output::{
    AtomicFile, OutputError, TempPath, free_bytes, prepare_output_dir, remove_temporary_files,
    write_text,
};
pub use preflight::{short_run_warning, size_refusal, size_warning, validation_summary};
pub use progress::Progress;
pub use run::{DecisionParts, ReportError, WriteOptions, stale_outputs, summary_rows, write_run};
pub use runs::{
    comparison_chart, comparison_csv, render_comparison, render_runs, summary_csv, summary_json,
};
pub use summary::{RetryOutcome, SummaryRow, format_ratio};
pub use sweep::{Goal, SweepHeading, SweepRow, render_sweep, sweep_rows, write_sweep};
pub use table::{
    TableOptions, render_ratio_matrix, render_retry_outcomes, render_rows, render_summary_table,
};
