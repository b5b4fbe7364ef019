//! PNG charts: they decode at the expected size, are not blank, draw the right things,
//! and survive degenerate input.

use std::fs;
use std::path::Path;

use ratesim::report::charts::{
    CHART_HEIGHT, CHART_WIDTH, OverAdmissionChart, RgbImage, TimelineBinner, TimelineChart,
    TimelineLane, TimelineMarks, TimelinePoint, WindowCountChart, WindowCountSeries,
    algorithm_color, lane_chart_size, render_over_admission, render_over_admission_rgb,
    render_timeline, render_timeline_rgb, render_window_counts, render_window_counts_rgb,
};
use ratesim::{FakeClock, Nanos, RateLimiter, Registry, Rule};

const ALGORITHMS: [&str; 6] = [
    "token_bucket",
    "leaky_bucket",
    "fixed_window",
    "sliding_window_log",
    "sliding_window_counter",
    "gcra",
];
const WINDOW_S: u64 = 10;
const LIMIT: u64 = 5;
const DURATION_S: u64 = 60;

/// The teaching case: 5 requests just before and 5 just after every 10 s boundary,
/// plus one request every 2.5 s, run through the real limiters (5 per 10 s).
fn burst_arrivals() -> Vec<Nanos> {
    let mut times = Vec::new();
    for k in 1..DURATION_S / WINDOW_S {
        let boundary = Nanos::from_secs(k * WINDOW_S).as_u64();
        for j in 0..5u64 {
            times.push(Nanos::new(boundary - 100_000_000 + j * 20_000_000));
            times.push(Nanos::new(boundary + j * 20_000_000));
        }
    }
    for i in 0..DURATION_S * 2 / 5 {
        times.push(Nanos::from_millis(1_300 + i * 2_500));
    }
    times.sort();
    times
}

struct Fixture {
    timeline: TimelineChart,
    windows: WindowCountChart,
    bars: OverAdmissionChart,
}

/// The built-in `name`'s place in the registry, which picks its colour.
fn slot(name: &str) -> usize {
    Registry::builtin().position(name).unwrap()
}

fn burst_fixture() -> Fixture {
    let rule = Rule::new(LIMIT, Nanos::from_secs(WINDOW_S)).unwrap();
    let arrivals = burst_arrivals();
    let window = Nanos::from_secs(WINDOW_S).as_u64();
    let mut lanes = Vec::new();
    let mut series = Vec::new();
    let mut bars = Vec::new();
    for name in ALGORITHMS {
        let algorithm = Registry::default().create(name, rule).unwrap();
        let clock = FakeClock::new(Nanos::ZERO);
        let limiter = RateLimiter::with_clock(algorithm, clock.clone());
        let mut points = Vec::new();
        let mut admitted = Vec::new();
        for &t in &arrivals {
            clock.set(t);
            let decision = limiter.try_acquire("client");
            points.push(TimelinePoint {
                time_s: t.as_secs_f64(),
                allowed: decision.allowed,
            });
            if decision.allowed {
                admitted.push(t.as_u64());
            }
        }
        // Exact trailing-window count (t − W, t] at every admission and expiry.
        let mut events: Vec<u64> = admitted.iter().flat_map(|&t| [t, t + window]).collect();
        events.sort_unstable();
        events.dedup();
        let counts: Vec<(f64, u64)> = events
            .iter()
            .map(|&t| {
                let c = admitted
                    .iter()
                    .filter(|&&a| a <= t && a + window > t)
                    .count() as u64;
                (Nanos::new(t).as_secs_f64(), c)
            })
            .collect();
        let max = counts.iter().map(|c| c.1).max().unwrap_or(0);
        lanes.push(TimelineLane {
            algorithm: name.to_string(),
            marks: TimelineMarks::Points(points),
        });
        series.push(WindowCountSeries {
            algorithm: name.to_string(),
            key: Some("client-0".into()),
            color_slot: slot(name),
            points: counts,
        });
        bars.push((name.to_string(), max as f64 / LIMIT as f64));
    }
    Fixture {
        timeline: TimelineChart {
            title: "burst: decisions over time (limit 5 per 10 s)".into(),
            duration_s: DURATION_S as f64,
            window_s: Some(WINDOW_S as f64),
            lanes,
        },
        windows: WindowCountChart {
            title: "burst: admitted requests in the trailing 10 s window".into(),
            duration_s: DURATION_S as f64,
            window_s: Some(WINDOW_S as f64),
            limit: LIMIT,
            series,
        },
        bars: OverAdmissionChart {
            title: "burst: over-admission (1.0 = never above the limit)".into(),
            bars,
        },
    }
}

/// Checks the PNG signature and reads the IHDR width and height.
fn png_size(path: &Path) -> (u32, u32, usize) {
    let bytes = fs::read(path).unwrap();
    assert!(bytes.len() > 24, "{} is too short", path.display());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (w, h, bytes.len())
}

fn pixels_of(image: &RgbImage, rgb: (u8, u8, u8)) -> usize {
    image
        .pixels
        .chunks_exact(3)
        .filter(|p| (p[0], p[1], p[2]) == rgb)
        .count()
}

fn non_white(image: &RgbImage) -> usize {
    image
        .pixels
        .chunks_exact(3)
        .filter(|p| p != &[255, 255, 255])
        .count()
}

fn rgb(c: plotters::style::RGBColor) -> (u8, u8, u8) {
    (c.0, c.1, c.2)
}

#[test]
fn the_fixture_reproduces_the_fixed_window_boundary_burst() {
    let f = burst_fixture();
    let get = |name: &str| f.bars.bars.iter().find(|b| b.0 == name).unwrap().1;
    assert_eq!(get("fixed_window"), 2.0);
    assert_eq!(get("sliding_window_log"), 1.0);
}

#[test]
fn chart_files_are_pngs_of_the_expected_size_and_not_blank() {
    let f = burst_fixture();
    let dir = tempfile::tempdir().unwrap();
    let timeline = render_timeline(&f.timeline, &dir.path().join("timeline.png")).unwrap();
    let windows = render_window_counts(&f.windows, &dir.path().join("window_counts.png")).unwrap();
    let bars = render_over_admission(&f.bars, &dir.path().join("over_admission.png")).unwrap();
    for path in [&timeline, &windows, &bars] {
        let (w, h, len) = png_size(path);
        assert_eq!((w, h), (CHART_WIDTH, CHART_HEIGHT), "{}", path.display());
        // A blank 1200×700 PNG compresses to a few kilobytes.
        assert!(
            len > 20_000,
            "{} is suspiciously small: {len} bytes",
            path.display()
        );
    }
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["over_admission.png", "timeline.png", "window_counts.png"],
        "no temporary files left behind"
    );
}

#[test]
fn the_timeline_shows_allowed_in_green_and_denied_in_red() {
    let f = burst_fixture();
    let image = render_timeline_rgb(&f.timeline).unwrap();
    assert_eq!(
        image.pixels.len(),
        (CHART_WIDTH * CHART_HEIGHT * 3) as usize
    );
    assert!(non_white(&image) > 20_000);
    let green = pixels_of(&image, (26, 150, 65));
    let red = pixels_of(&image, (215, 48, 39));
    assert!(green > 1_000, "green pixels: {green}");
    assert!(red > 1_000, "red pixels: {red}");
}

#[test]
fn the_window_chart_draws_every_algorithm_in_its_colour() {
    let f = burst_fixture();
    let image = render_window_counts_rgb(&f.windows).unwrap();
    for name in ALGORITHMS {
        let count = pixels_of(&image, rgb(algorithm_color(slot(name))));
        assert!(count > 100, "{name}: {count} pixels");
    }
}

/// Small multiples: each algorithm's line lies in a horizontal band of its own, in
/// order, so no line hides another (six overlaid step lines did).
#[test]
fn the_window_chart_gives_each_algorithm_its_own_panel() {
    let f = burst_fixture();
    let image = render_window_counts_rgb(&f.windows).unwrap();
    let width = image.width as usize;
    let rows_of = |colour: (u8, u8, u8)| {
        let rows: Vec<usize> = image
            .pixels
            .chunks_exact(3)
            .enumerate()
            .filter(|(_, p)| (p[0], p[1], p[2]) == colour)
            .map(|(i, _)| i / width)
            .collect();
        (*rows.iter().min().unwrap(), *rows.iter().max().unwrap())
    };
    let bands: Vec<(usize, usize)> = ALGORITHMS
        .iter()
        .map(|name| rows_of(rgb(algorithm_color(slot(name)))))
        .collect();
    for pair in bands.windows(2) {
        assert!(pair[0].1 < pair[1].0, "bands overlap: {bands:?}");
    }
}

/// The chart draws every point it is given (the simulator is the one place a series
/// is thinned), so a one-point spike in a long series reaches its full height.
#[test]
fn a_one_point_spike_in_a_long_series_is_drawn_at_its_height() {
    let chart = |spike: bool| {
        let mut points: Vec<(f64, u64)> = (0..100_000).map(|i| (i as f64 / 1000.0, 5)).collect();
        if spike {
            points[54_321].1 = 10;
        }
        WindowCountChart {
            title: "spike".into(),
            duration_s: 100.0,
            window_s: None,
            // The limit fixes the y axis, so both charts share it.
            limit: 10,
            series: vec![WindowCountSeries {
                algorithm: "fixed_window".into(),
                key: Some("client-0".into()),
                color_slot: slot("fixed_window"),
                points,
            }],
        }
    };
    let colour = rgb(algorithm_color(slot("fixed_window")));
    let top_row = |image: &RgbImage| {
        let width = image.width as usize;
        image
            .pixels
            .chunks_exact(3)
            .position(|p| (p[0], p[1], p[2]) == colour)
            .map(|i| i / width)
            .unwrap()
    };
    let flat = top_row(&render_window_counts_rgb(&chart(false)).unwrap());
    let spiked = top_row(&render_window_counts_rgb(&chart(true)).unwrap());
    // 5 of the axis's 13 units are about 200 px of the 570 px panel.
    assert!(
        spiked + 150 < flat,
        "the spike's top row {spiked} should be far above the flat line's {flat}"
    );
}

#[test]
fn the_over_admission_chart_marks_only_over_limit_bars_in_the_warning_colour() {
    let f = burst_fixture();
    let image = render_over_admission_rgb(&f.bars).unwrap();
    let warning = pixels_of(&image, (213, 94, 0));
    let within = pixels_of(&image, (0, 114, 178));
    assert!(warning > 5_000, "one over-limit bar: {warning} px");
    assert!(
        within > 5 * 5_000,
        "five bars within the limit: {within} px"
    );

    let all_within = OverAdmissionChart {
        title: "t".into(),
        bars: vec![("a".into(), 1.0), ("b".into(), 0.5)],
    };
    let image = render_over_admission_rgb(&all_within).unwrap();
    // Only the legend swatch uses the warning colour then.
    assert!(pixels_of(&image, (213, 94, 0)) < 1_000);
}

#[test]
fn degenerate_inputs_render_without_panicking() {
    let timelines = [
        TimelineChart {
            title: String::new(),
            duration_s: 0.0,
            window_s: Some(0.0),
            lanes: vec![],
        },
        TimelineChart {
            title: "one point".into(),
            duration_s: f64::NAN,
            window_s: Some(f64::INFINITY),
            lanes: vec![TimelineLane {
                algorithm: String::new(),
                marks: TimelineMarks::Points(vec![TimelinePoint {
                    time_s: 0.0,
                    allowed: true,
                }]),
            }],
        },
        TimelineChart {
            title: "odd buckets".into(),
            duration_s: -5.0,
            window_s: Some(1e-9),
            lanes: vec![TimelineLane {
                algorithm: "x".repeat(200),
                marks: TimelineMarks::Buckets(vec![ratesim::report::charts::TimelineBucket {
                    start_s: f64::NAN,
                    end_s: 3.0,
                    allowed: u64::MAX,
                    denied: u64::MAX,
                }]),
            }],
        },
    ];
    for t in &timelines {
        render_timeline_rgb(t).unwrap();
    }
    let windows = [
        WindowCountChart {
            title: String::new(),
            duration_s: 0.0,
            window_s: None,
            limit: 0,
            series: vec![],
        },
        WindowCountChart {
            title: "huge".into(),
            duration_s: 1e12,
            window_s: Some(1.0),
            limit: u64::MAX,
            series: vec![WindowCountSeries {
                algorithm: "gcra".into(),
                key: Some("client-0".into()),
                color_slot: slot("gcra"),
                points: vec![(f64::NAN, 3), (5.0, u64::MAX), (f64::INFINITY, 1)],
            }],
        },
        WindowCountChart {
            title: "single".into(),
            duration_s: 60.0,
            window_s: Some(10.0),
            limit: 5,
            series: vec![WindowCountSeries {
                algorithm: "fixed_window".into(),
                key: Some("client-0".into()),
                color_slot: slot("fixed_window"),
                points: vec![(0.0, 1)],
            }],
        },
    ];
    for w in &windows {
        render_window_counts_rgb(w).unwrap();
    }
    for bars in [
        vec![],
        vec![("nan".to_string(), f64::NAN)],
        vec![
            ("inf".to_string(), f64::INFINITY),
            ("neg".to_string(), -1.0),
            ("huge".to_string(), 1e300),
        ],
    ] {
        render_over_admission_rgb(&OverAdmissionChart {
            title: "bars".into(),
            bars,
        })
        .unwrap();
    }
}

#[test]
fn huge_runs_are_binned_and_still_render() {
    let mut binner = TimelineBinner::new(3600.0, 400);
    for i in 0..1_000_000u64 {
        binner.record(i as f64 * 0.0036, i % 3 != 0);
    }
    let points: Vec<TimelinePoint> = (0..50_000)
        .map(|i| TimelinePoint {
            time_s: i as f64 * 0.072,
            allowed: i % 7 != 0,
        })
        .collect();
    let chart = TimelineChart {
        title: "an hour".into(),
        duration_s: 3600.0,
        window_s: Some(1.0),
        lanes: vec![
            TimelineLane {
                algorithm: "token_bucket".into(),
                marks: TimelineMarks::Buckets(binner.into_buckets()),
            },
            TimelineLane {
                algorithm: "gcra".into(),
                marks: TimelineMarks::Points(points),
            },
        ],
    };
    let image = render_timeline_rgb(&chart).unwrap();
    assert!(pixels_of(&image, (26, 150, 65)) > 1_000);
}

#[test]
fn many_lanes_make_a_taller_chart() {
    let lanes: Vec<TimelineLane> = (0..12)
        .map(|i| TimelineLane {
            algorithm: format!("algo_{i}"),
            marks: TimelineMarks::Points(vec![]),
        })
        .collect();
    let chart = TimelineChart {
        title: "many".into(),
        duration_s: 10.0,
        window_s: None,
        lanes,
    };
    let image = render_timeline_rgb(&chart).unwrap();
    assert_eq!((image.width, image.height), lane_chart_size(12));
    assert!(image.height > CHART_HEIGHT);
}

/// Writes the fixture's charts to /tmp/charts for a person to look at:
/// `cargo test --test report_charts -- --ignored`
#[test]
#[ignore = "writes files outside the test's temporary directory"]
fn write_charts_for_viewing() {
    let f = burst_fixture();
    let dir = Path::new("/tmp/charts");
    fs::create_dir_all(dir).unwrap();
    render_timeline(&f.timeline, &dir.join("timeline.png")).unwrap();
    render_window_counts(&f.windows, &dir.join("window_counts.png")).unwrap();
    render_over_admission(&f.bars, &dir.join("over_admission.png")).unwrap();

    // A big run: an hour of on/off traffic, 10-minute phases, a million decisions per lane.
    let mut lanes = Vec::new();
    for (a, name) in ALGORITHMS.iter().enumerate() {
        let mut binner = TimelineBinner::new(3600.0, 400);
        for i in 0..1_000_000u64 {
            let t = i as f64 * 0.0036;
            let busy = ((t / 600.0).floor() as u64).is_multiple_of(2);
            let allowed = if busy {
                (i + a as u64).is_multiple_of(3)
            } else {
                !i.is_multiple_of(10)
            };
            binner.record(t, allowed);
        }
        lanes.push(TimelineLane {
            algorithm: name.to_string(),
            marks: TimelineMarks::Buckets(binner.into_buckets()),
        });
    }
    let big = TimelineChart {
        title: "on_off: decisions over an hour (binned)".into(),
        duration_s: 3600.0,
        window_s: Some(60.0),
        lanes,
    };
    render_timeline(&big, &dir.join("timeline_binned.png")).unwrap();
}

#[test]
fn a_tick_at_the_very_end_of_the_timeline_is_drawn_whole() {
    let green_of = |time_s: f64| {
        let chart = TimelineChart {
            title: "edge".into(),
            duration_s: 60.0,
            window_s: None,
            lanes: vec![TimelineLane {
                algorithm: "fixed_window".into(),
                marks: TimelineMarks::Points(vec![TimelinePoint {
                    time_s,
                    allowed: true,
                }]),
            }],
        };
        pixels_of(&render_timeline_rgb(&chart).unwrap(), (26, 150, 65))
    };
    let middle = green_of(30.0);
    assert!(middle > 0);
    // A guard: the axis has room past its end so no mark there is cut by the edge.
    assert!(green_of(60.0) >= middle, "{} < {middle}", green_of(60.0));
}
