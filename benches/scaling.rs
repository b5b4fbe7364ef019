//! How the cost of a decision grows with the number of keys (1 → 1,000,000) and, for
//! the sliding log, with `max_requests` (10 → 100,000); prints both tables and draws
//! `docs/scaling.png`.
//!
//! Run: `cargo bench --bench scaling` (about a minute). Each point is the median of 3
//! timed runs of 1,000,000 decisions; keys are visited in random order (the cache's
//! worst case) with `String` keys on the real clock, as a server would use the limiter.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::path::Path;
use std::time::Instant;

use governor::{Quota, RateLimiter as Governor};
use plotters::prelude::*;
use ratesim::{
    Algorithm, Clock, FakeClock, FixedWindow, Gcra, MonotonicClock, Nanos, RateLimiter, Rule,
    SlidingWindowLog, TokenBucket,
};

const DECISIONS: u64 = 1_000_000;
const REPEATS: usize = 3;
const KEY_COUNTS: [usize; 7] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];
const LOG_MAXES: [u64; 5] = [10, 100, 1_000, 10_000, 100_000];

/// A cheap uniform walk over `0..n` (xorshift64*), the same for every contender.
struct Walk(u64, usize);

impl Walk {
    #[inline]
    fn next(&mut self) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as usize % self.1
    }
}

/// Median ns per decision of `REPEATS` runs of `DECISIONS` calls of `decide`.
fn time(mut decide: impl FnMut()) -> f64 {
    let mut runs: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..DECISIONS {
                decide();
            }
            start.elapsed().as_nanos() as f64 / DECISIONS as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[REPEATS / 2]
}

fn rule() -> Rule {
    Rule::new(1_000_000_000, Nanos::from_secs(1)).unwrap()
}

fn ratesim_curve<A: Algorithm>(algorithm: impl Fn() -> A, keys: &[String]) -> Vec<f64> {
    KEY_COUNTS
        .iter()
        .map(|&n| {
            let limiter: RateLimiter<A, String> = RateLimiter::new(algorithm());
            for k in &keys[..n] {
                limiter.try_acquire(k.as_str());
            }
            let mut walk = Walk(0x9E37_79B9_7F4A_7C15, n);
            time(|| {
                black_box(limiter.try_acquire(keys[walk.next()].as_str()));
            })
        })
        .collect()
}

fn governor_curve(keys: &[String]) -> Vec<f64> {
    KEY_COUNTS
        .iter()
        .map(|&n| {
            let g = Governor::keyed(Quota::per_second(NonZeroU32::new(1_000_000_000).unwrap()));
            for k in &keys[..n] {
                let _ = g.check_key(k);
            }
            let mut walk = Walk(0x9E37_79B9_7F4A_7C15, n);
            time(|| {
                black_box(g.check_key(&keys[walk.next()]).is_ok());
            })
        })
        .collect()
}

fn floor_curve() -> Vec<f64> {
    KEY_COUNTS
        .iter()
        .map(|&n| {
            let algo = TokenBucket::new(rule());
            let clock = MonotonicClock::new();
            let mut states: Vec<_> = (0..n).map(|_| algo.new_state(clock.now())).collect();
            let mut walk = Walk(0x9E37_79B9_7F4A_7C15, n);
            time(|| {
                let i = walk.next();
                black_box(algo.try_acquire(&mut states[i], clock.now(), 1));
            })
        })
        .collect()
}

/// The sliding log on one key at `max` per second, the clock stepping `1 s / (max ·
/// speed)` per request: `speed` 1 admits every request (one entry expires per
/// decision), 2 denies every other one.
fn log_curve(speed: u64) -> Vec<f64> {
    LOG_MAXES
        .iter()
        .map(|&max| {
            let rule = Rule::new(max, Nanos::from_secs(1)).unwrap();
            let clock = FakeClock::new(Nanos::ZERO);
            let limiter: RateLimiter<SlidingWindowLog, u32, FakeClock> =
                RateLimiter::with_clock(SlidingWindowLog::new(rule), clock.clone());
            let step = Nanos::new(1_000_000_000 / (max * speed));
            // Fill the log to its steady state first.
            for _ in 0..2 * max * speed {
                clock.advance(step);
                limiter.try_acquire(&0);
            }
            time(|| {
                clock.advance(step);
                black_box(limiter.try_acquire(&0));
            })
        })
        .collect()
}

fn table(header: &str, xs: &[u64], series: &[(&str, Vec<f64>)]) {
    print!("| {header} |");
    for (name, _) in series {
        print!(" {name} |");
    }
    print!("\n|---:|");
    for _ in series {
        print!("---:|");
    }
    println!();
    for (i, x) in xs.iter().enumerate() {
        print!("| {x} |");
        for (_, ys) in series {
            print!(" {:.1} |", ys[i]);
        }
        println!();
    }
    println!();
}

type Series<'a> = [(&'a str, Vec<f64>)];

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    x_desc: &str,
    xs: &[u64],
    series: &Series<'_>,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let y_max = series
        .iter()
        .flat_map(|(_, ys)| ys.iter().copied())
        .fold(0.0, f64::max)
        * 1.15;
    let x_range = (xs[0] as f64 * 0.7)..(xs[xs.len() - 1] as f64 * 1.4);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 28))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(72)
        .build_cartesian_2d(x_range.log_scale(), 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("ns per decision")
        .x_label_formatter(&|x| {
            let v = x.round() as u64;
            match v {
                v if v >= 1_000_000 => format!("{}M", v / 1_000_000),
                v if v >= 1_000 => format!("{}k", v / 1_000),
                v => v.to_string(),
            }
        })
        .label_style(("sans-serif", 20))
        .axis_desc_style(("sans-serif", 22))
        .draw()?;
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
    ];
    for (i, (name, ys)) in series.iter().enumerate() {
        let color = palette[i % palette.len()];
        let points: Vec<(f64, f64)> = xs
            .iter()
            .map(|&x| x as f64)
            .zip(ys.iter().copied())
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(3)))?
            .label(*name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 5, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 20))
        .draw()?;
    Ok(())
}

fn chart(
    path: &Path,
    keys: &Series<'_>,
    log: &Series<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    // The embedded font ratesim's own charts use: no system fonts needed.
    ratesim::report::register_fonts()?;
    let root = BitMapBackend::new(path, (1600, 620)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(960);
    let xs: Vec<u64> = KEY_COUNTS.iter().map(|&n| n as u64).collect();
    panel(
        &left,
        "Cost per decision vs keys (String keys, real clock, random order)",
        "keys held (log scale)",
        &xs,
        keys,
    )?;
    panel(
        &right,
        "Sliding log: cost vs max_requests (1 key)",
        "max_requests per window (log scale)",
        &LOG_MAXES,
        log,
    )?;
    root.present()?;
    Ok(())
}

fn main() {
    let keys: Vec<String> = (0..1_000_000).map(|i| format!("client-{i}")).collect();
    let key_series = vec![
        (
            "ratesim token_bucket",
            ratesim_curve(|| TokenBucket::new(rule()), &keys),
        ),
        ("ratesim gcra", ratesim_curve(|| Gcra::new(rule()), &keys)),
        (
            "ratesim fixed_window",
            ratesim_curve(|| FixedWindow::new(rule()), &keys),
        ),
        ("governor 0.10", governor_curve(&keys)),
        ("floor (Vec, no hash/lock)", floor_curve()),
    ];
    let xs: Vec<u64> = KEY_COUNTS.iter().map(|&n| n as u64).collect();
    table("keys", &xs, &key_series);
    let log_series = vec![
        ("every request admitted", log_curve(1)),
        ("every other request denied", log_curve(2)),
    ];
    table("max_requests", &LOG_MAXES, &log_series);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scaling.png");
    match chart(&path, &key_series, &log_series) {
        Ok(()) => println!("chart: {}", path.display()),
        Err(e) => eprintln!("cannot draw {}: {e}", path.display()),
    }
}
