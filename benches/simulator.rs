//! The simulator end to end: decisions per second per core with every metric on and no
//! `decisions.csv`, and `decisions.csv` rows per second.
//!
//! Not a criterion bench: one run of 10 M requests × 6 algorithms takes seconds, so it
//! is timed once (wall clock and per-thread CPU time) and printed as a table.
//!
//! ```text
//! cargo bench --bench simulator                      # 1 M requests (quick)
//! RATESIM_SIM_REQUESTS=10000000 cargo bench --bench simulator   # the issue's 10 M
//! ```
//! `RATESIM_SIM_THREADS` (default 2) sets the worker threads. "Per core" divides the
//! decisions by the CPU seconds the process used (user + system), so it does not
//! flatter a run that waited for a busy machine.

use std::path::Path;
use std::time::Instant;

use ratesim::Nanos;
use ratesim::report::{DecisionCsvWriter, DecisionRecord};
use ratesim::sim::{self, NoopSink, RunOptions, Scenario};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// A Poisson stream of `requests` arrivals over 100 s, spread over `keys` clients
/// (Zipf 1.1 when there are many), limited to 100 per second per key.
fn scenario(requests: u64, keys: u64) -> Scenario {
    let duration_s = 100;
    let rate = requests / duration_s;
    let popularity = if keys > 1 {
        "key_popularity = \"zipf\"\nzipf_exponent = 1.1"
    } else {
        ""
    };
    let text = format!(
        r#"
        name = "throughput"
        seed = 6
        duration = "{duration_s}s"
        algorithms = ["all"]
        [limit]
        max_requests = 100
        window = "1s"
        [[traffic]]
        kind = "poisson"
        rate = {rate}
        keys = {keys}
        {popularity}
        "#
    );
    Scenario::parse(&text, Path::new("throughput.toml")).expect("valid scenario")
}

/// CPU time of this process so far (user + system), from /proc/self/stat.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// Peak resident set size of this process, in MB, from /proc/self/status.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn run_one(requests: u64, keys: u64, threads: usize) {
    let sc = scenario(requests, keys);
    let options = RunOptions {
        threads,
        ..RunOptions::default()
    };
    let cpu0 = cpu_seconds().unwrap_or(0.0);
    let start = Instant::now();
    let report = sim::run(&sc, &options, &mut |_| Ok(Box::new(NoopSink))).expect("run");
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds().unwrap_or(0.0) - cpu0;
    let decisions: u64 = report.algorithms.iter().map(|a| a.metrics.attempts).sum();
    println!(
        "sim/{requests}_requests/{keys}_keys/{threads}_threads: {decisions} decisions, \
         wall {wall:.2} s, cpu {cpu:.2} s, {:.2} M decisions/s/core, {:.2} M decisions/s wall, \
         peak RSS so far {:.0} MB",
        decisions as f64 / cpu.max(1e-9) / 1e6,
        decisions as f64 / wall / 1e6,
        peak_rss_mb().unwrap_or(f64::NAN),
    );
}

/// `decisions.csv` rows per second: realistic rows formatted and written to a buffered
/// sink that discards bytes (the disk is not what is measured).
fn csv_rows(rows: u64) {
    let sink = std::io::BufWriter::with_capacity(1 << 16, std::io::sink());
    let mut writer = DecisionCsvWriter::from_writer(sink).expect("header");
    let keys: Vec<String> = (0..1000).map(|i| format!("client-{i}")).collect();
    let start = Instant::now();
    for i in 0..rows {
        let allowed = i % 3 != 0;
        writer
            .write(&DecisionRecord {
                algorithm: "sliding_window_counter",
                seq: i,
                attempt: 0,
                time: Nanos::new(i * 10_017),
                key: &keys[(i % 1000) as usize],
                cost: 1,
                allowed,
                remaining: i % 100,
                retry_after: Some(if allowed {
                    Nanos::ZERO
                } else {
                    Nanos::new(123_456_789)
                }),
                delay: Nanos::ZERO,
                node: None,
                denied_by: (!allowed).then_some("100/1s"),
            })
            .expect("write");
    }
    writer.into_inner().expect("flush");
    let secs = start.elapsed().as_secs_f64();
    println!(
        "decisions_csv/{rows}_rows: {secs:.2} s, {:.2} M rows/s",
        rows as f64 / secs / 1e6
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a name filter from the command line is honoured.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let requests = env_u64("RATESIM_SIM_REQUESTS", 1_000_000);
    let threads = env_u64("RATESIM_SIM_THREADS", 2) as usize;
    if wanted("sim") {
        let keys = match std::env::var("RATESIM_SIM_KEYS") {
            Ok(k) => vec![
                k.replace('_', "")
                    .parse()
                    .expect("RATESIM_SIM_KEYS: a number"),
            ],
            Err(_) => vec![1, 100_000],
        };
        for k in keys {
            run_one(requests, k, threads);
        }
    }
    if wanted("csv") {
        csv_rows(requests.max(1_000_000));
    }
}
