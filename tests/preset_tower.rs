//! The `tower` preset against tower's own `RateLimit` (tower 0.5) on tokio's paused
//! clock: the same arrivals, and every request's wait must be identical to the
//! nanosecond (issue 28).
//!
//! The driver is one caller that, for each arrival in order, moves the clock exactly to
//! the arrival (or, if a previous caller is still held back, keeps its place in line),
//! waits for `poll_ready` and calls. The instant `ready` returns is the admission. A
//! paused runtime jumps to a pending timer by whole milliseconds counted from the
//! *floor* of the current instant, which a running runtime does not do (its clock runs
//! on and the timer fires on its millisecond tick): so when the service is not ready,
//! the driver first moves to the next whole millisecond (never past the timer's tick,
//! which is later since the timer has not fired) and then lets tokio jump.

use std::convert::Infallible;
use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

use ratesim::presets::Tower;
use ratesim::{Algorithm, Nanos, Rule};
use tokio::time::{Instant, advance};
use tower::limit::{RateLimit, rate::Rate};
use tower::{Service, ServiceExt, service_fn};

const MS: u64 = 1_000_000;

/// Waits (ns after the arrival) that the real tower gave each arrival of `trace`.
/// `start` is when the runtime started: tokio's timer counts whole milliseconds from
/// it, so each trace's origin is put on that grid, as the preset's origin is.
async fn real_waits(start: Instant, num: u64, per: Nanos, trace: &[u64]) -> Vec<u64> {
    let run = Instant::now().duration_since(start).as_nanos() as u64;
    advance(Duration::from_nanos(run.div_ceil(MS) * MS - run)).await;
    let origin = Instant::now();
    let since = |i: Instant| i.duration_since(origin).as_nanos() as u64;
    let inner = service_fn(|_: ()| async { Ok::<_, Infallible>(()) });
    let mut svc = RateLimit::new(inner, Rate::new(num, Duration::from_nanos(per.as_u64())));
    let mut waits = Vec::with_capacity(trace.len());
    for &t in trace {
        let now = since(Instant::now());
        if t > now {
            advance(Duration::from_nanos(t - now)).await;
        }
        let ready = poll_fn(|cx| Poll::Ready(svc.poll_ready(cx).is_ready())).await;
        if !ready {
            let now = since(Instant::now());
            let grid = now.div_ceil(MS) * MS;
            if grid > now {
                advance(Duration::from_nanos(grid - now)).await;
            }
            svc.ready().await.expect("infallible");
        }
        let admitted = since(Instant::now());
        let _response = svc.call(());
        waits.push(admitted - t);
    }
    waits
}

fn preset_waits(num: u64, per: Nanos, trace: &[u64]) -> Vec<u64> {
    let algo = Tower::new(Rule::new(num, per).unwrap());
    let mut state = algo.new_state(Nanos::ZERO);
    trace
        .iter()
        .map(|&t| algo.acquire(&mut state, Nanos::new(t), 1).delay().as_u64())
        .collect()
}

/// A small deterministic generator (xorshift64*), so each trace is reproducible.
struct Gen(u64);

impl Gen {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % below.max(1)
    }
}

/// The traces for one rate: off-grid gaps, same-instant groups, bursts on both sides of
/// each `per` boundary, and instants on and just off whole milliseconds.
fn traces(num: u64, per: u64, seed: u64) -> Vec<(&'static str, Vec<u64>)> {
    let mut g = Gen(seed | 1);
    let mean_gap = per / num;
    let mut t = 0;
    let off_grid: Vec<u64> = (0..300)
        .map(|_| {
            t += g.next(2 * mean_gap + 1);
            t
        })
        .collect();
    let mut t = 0;
    let mut same_instant = Vec::new();
    while same_instant.len() < 300 {
        t += g.next(3 * per);
        for _ in 0..=g.next(2 * num + 1) {
            same_instant.push(t);
        }
    }
    let mut boundary = Vec::new();
    for k in 1..=20 {
        let edge = k * per;
        let width = (per / 20).max(1);
        for i in 0..num {
            boundary.push(edge - width + i * width / num.max(1));
        }
        for i in 0..num {
            boundary.push(edge + i * width / num.max(1));
        }
    }
    let mut ms_edges = Vec::new();
    let mut t = MS;
    for i in 0..300u64 {
        t += [MS - 1, 1, MS, MS + 1, 0, 2 * MS - 1][(i % 6) as usize] + g.next(per / num + 1);
        ms_edges.push(t);
    }
    // Groups of num − 1 calls exactly at each window's end: each opens a new window.
    let mut at_window_end = Vec::new();
    let mut t = g.next(MS);
    for k in 0..100 {
        for _ in 0..num.saturating_sub(1).max(1) {
            at_window_end.push(t);
        }
        t += if k % 3 == 2 { per - 1 } else { per };
    }
    vec![
        ("calls at the window's end", at_window_end),
        ("off-grid gaps", off_grid),
        ("same-instant groups", same_instant),
        ("boundary bursts", boundary),
        ("millisecond edges", ms_edges),
    ]
}

/// Rates with `per` a whole number of ms, not one, under one ms, and `num` of 1.
const RATES: [(u64, u64); 6] = [
    (1, 1_500_000),
    (3, 10 * MS),
    (5, 333_333_333),
    (2, 7_654_321),
    (10, 1_000 * MS),
    (4, 250_000),
];

#[tokio::test(start_paused = true)]
async fn the_tower_preset_gives_every_request_the_wait_tower_gives_it() {
    let start = Instant::now();
    let mut compared = 0;
    for (i, &(num, per)) in RATES.iter().enumerate() {
        let (mut waited, mut passed) = (0, 0);
        for (name, trace) in traces(num, per, 0x9E37_79B9 + i as u64) {
            let real = real_waits(start, num, Nanos::new(per), &trace).await;
            let model = preset_waits(num, Nanos::new(per), &trace);
            let diffs: Vec<String> = (0..trace.len())
                .filter(|&k| real[k] != model[k])
                .take(5)
                .map(|k| {
                    format!(
                        "#{k} at {} ns: tower waited {} ns, preset {} ns",
                        trace[k], real[k], model[k]
                    )
                })
                .collect();
            assert!(
                diffs.is_empty(),
                "{num} per {per} ns, {name}: {}",
                diffs.join("; ")
            );
            waited += real.iter().filter(|&&w| w > 0).count();
            passed += real.iter().filter(|&&w| w == 0).count();
            compared += trace.len();
        }
        assert!(
            waited >= 20 && passed >= 5,
            "{num} per {per} ns: the traces must see passes ({passed}) and waits ({waited})"
        );
    }
    eprintln!("tower preset: {compared} requests compared, all identical");
    assert!(compared >= 6 * 4 * 200);
}
