//! Report renderers: files, CSV, the terminal table, progress bars and PNG charts.
//!
//! Everything here is a pure function (or a streaming writer) over plain input structs
//! defined in this module tree: the report layer reads results, it must not drive or
//! depend on the simulator. A thin glue layer maps simulator results to these inputs.
//! Floats appear only here, at the display edge; times in CSV are exact decimals
//! from [`Nanos`](crate::Nanos).

pub mod charts;
pub mod csvout;
pub mod output;
pub mod progress;
pub mod summary;
pub mod table;

pub use charts::{
    ChartError, OverAdmissionChart, TimelineBinner, TimelineBucket, TimelineChart, TimelineLane,
    TimelineMarks, TimelinePoint, WindowCountChart, WindowCountSeries, render_over_admission,
    render_timeline, render_window_counts,
};
pub use csvout::{
    DecisionCsvWriter, DecisionRecord, WindowCountRecord, WindowCountsCsvWriter, write_csv_rows,
    write_csv_rows_to, write_json, write_summary,
};
pub use output::{AtomicFile, OutputError, TempPath, prepare_output_dir};
pub use progress::Progress;
pub use summary::SummaryRow;
pub use table::{TableOptions, render_summary_table};
