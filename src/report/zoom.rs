//! The boundary zoom's data (one client's decisions on either side of one window edge,
//! each with the client's trailing-window admitted count after it, read back from
//! `decisions.csv`), and which edge it and the animation show.
//!
//! Why from the file: which edge to zoom on (where the worst over-admission happened)
//! and which client are known only once the run is over, and the simulator keeps no
//! per-decision record (it cannot, in bounded memory). `decisions.csv` holds every
//! decision exactly, so one streaming pass over it, keeping one client's last few
//! admissions per algorithm, rebuilds the picture in bounded memory. All times stay
//! integer nanoseconds here; the chart converts them for drawing. This module reads a
//! finished file; it never runs the engine and draws nothing.

use std::collections::VecDeque;
use std::path::Path;

use super::charts::{LanePeak, SlideAnimation, SlideSeries, ZoomChart, ZoomLane, ZoomMark};
use super::output::OutputError;
use super::readback::{ReadDecision, scan_decisions};
use super::views::{human_duration, limit_text};
use crate::sim::{AlgorithmReport, RunReport, WindowSample};
use crate::time::Nanos;

/// At most this many decisions on each side of the edge, per algorithm: enough for
/// any boundary burst a class would draw, few enough that each is its own mark.
pub const ZOOM_PER_SIDE: usize = 20;

/// After the edge the zoom goes on past [`ZOOM_PER_SIDE`] until the worst algorithm's
/// count reaches its peak, so the panel shows the number the summary reports; at most
/// this many decisions after the edge (beyond it the panel's caption says so).
pub const ZOOM_AFTER_MAX: usize = 60;

/// The instant a series first reaches its highest count.
pub fn first_peak(series: &[WindowSample]) -> Option<Nanos> {
    let high = series.iter().map(|s| s.count).max()?;
    series.iter().find(|s| s.count == high).map(|s| s.time)
}

/// The multiple of `window` nearest `t` (halfway rounds up), exactly.
pub fn nearest_boundary(t: Nanos, window: Nanos) -> Nanos {
    let (t, w) = (u128::from(t.as_u64()), u128::from(window.as_u64().max(1)));
    Nanos::saturating_from_u128((t + w / 2) / w * w)
}

/// Which decisions a zoom keeps: those around `edge` (half a `window` either side),
/// the last [`ZOOM_PER_SIDE`] before it, and after it the first [`ZOOM_PER_SIDE`] or,
/// if later, every one up to `until` (at most [`ZOOM_AFTER_MAX`]).
#[derive(Clone, Copy, Debug)]
pub struct ZoomFrame {
    /// The window boundary shown.
    pub edge: Nanos,
    /// The rule's window.
    pub window: Nanos,
    /// Keep decisions after the edge up to this instant (the worst peak).
    pub until: Nanos,
}

/// One kept decision: its mark and, for the fixed window, its own counter after it.
type Kept = (ZoomMark, Option<u64>);

/// One algorithm's pass over its rows: the client's admissions still in the window
/// (for the running count), the last decisions before the edge and the first after.
struct LaneBuilder {
    algorithm: String,
    live: VecDeque<(Nanos, u64)>,
    count: u64,
    /// The fixed window's own state for the client, `(window index, counter)`: what the
    /// algorithm believes, summed over servers in a deployment. `None` for the others.
    own: Option<(u64, u64)>,
    before: VecDeque<Kept>,
    after: Vec<Kept>,
}

impl LaneBuilder {
    fn new(algorithm: &str) -> LaneBuilder {
        LaneBuilder {
            algorithm: algorithm.to_string(),
            live: VecDeque::new(),
            count: 0,
            own: (algorithm == "fixed_window").then_some((0, 0)),
            before: VecDeque::new(),
            after: Vec::new(),
        }
    }

    /// True once the after side is complete: nothing later is kept.
    fn done(&self, time: Nanos, frame: &ZoomFrame) -> bool {
        let n = self.after.len();
        // Half a window either side: the burst at this edge, not the next edge's.
        let half = Nanos::new(frame.window.as_u64() / 2);
        n >= ZOOM_AFTER_MAX
            || (n >= ZOOM_PER_SIDE && time > frame.until)
            || time >= frame.edge.saturating_add(half)
    }

    /// One decision for the client at `time` (rows arrive in time order).
    fn decide(&mut self, d: &ReadDecision, frame: &ZoomFrame) {
        let (time, cost, allowed) = (d.time, d.cost, d.allowed);
        if self.done(time, frame) {
            return;
        }
        // An admission at `a` counts in `(t − W, t]` while `a + W > t`.
        while let Some(&(at, c)) = self.live.front() {
            if at.saturating_add(frame.window) > time {
                break;
            }
            self.live.pop_front();
            self.count -= c;
        }
        if allowed {
            self.live.push_back((time, cost));
            self.count += cost;
        }
        let own = self.own.as_mut().map(|(index, counter)| {
            // The fixed window's windows are `[k·W, (k+1)·W)`: a new one starts at 0.
            let k = time.as_u64() / frame.window.as_u64().max(1);
            if k != *index {
                (*index, *counter) = (k, 0);
            }
            if allowed {
                *counter = counter.saturating_add(cost);
            }
            *counter
        });
        let mark = ZoomMark {
            offset_ns: i128::from(time.as_u64()) - i128::from(frame.edge.as_u64()),
            allowed,
            count: self.count,
            node: d.node,
        };
        let half = Nanos::new(frame.window.as_u64() / 2);
        if time < frame.edge.saturating_sub(half) {
            return;
        }
        if time < frame.edge {
            if self.before.len() == ZOOM_PER_SIDE {
                self.before.pop_front();
            }
            self.before.push_back((mark, own));
        } else {
            self.after.push((mark, own));
        }
    }

    fn finish(self) -> ZoomLane {
        let kept: Vec<Kept> = self.before.into_iter().chain(self.after).collect();
        let counter = self
            .own
            .map(|_| kept.iter().map(|(_, own)| own.unwrap_or(0)).collect());
        ZoomLane {
            algorithm: self.algorithm,
            marks: kept.into_iter().map(|(mark, _)| mark).collect(),
            counter,
            peak: None,
        }
    }
}

/// Reads `decisions.csv` at `path` and returns, per algorithm of `algorithms`, `key`'s
/// decisions that `frame` keeps, each with the key's admitted count in the trailing
/// window after it (and the fixed window's own counter).
pub fn read_zoom(
    path: &Path,
    algorithms: &[&str],
    key: &str,
    frame: ZoomFrame,
) -> Result<Vec<ZoomLane>, OutputError> {
    let mut lanes: Vec<LaneBuilder> = algorithms.iter().map(|a| LaneBuilder::new(a)).collect();
    let wanted: Vec<(&str, &str)> = algorithms.iter().map(|&a| (a, key)).collect();
    scan_decisions(path, &wanted, |i, d| {
        lanes[i].decide(&d, &frame);
    })?;
    Ok(lanes.into_iter().map(LaneBuilder::finish).collect())
}

/// The algorithm that admitted the most in one window (the first of equals) and the
/// window boundary nearest the instant its followed client first reached its highest
/// count: the edge the zoom and the animation show.
fn worst_edge(report: &RunReport) -> Option<(&AlgorithmReport, Nanos, Nanos)> {
    let worst = report
        .algorithms
        .iter()
        .filter(|a| a.metrics.max_in_window > 0)
        .reduce(|best, a| {
            if a.metrics.max_in_window > best.metrics.max_in_window {
                a
            } else {
                best
            }
        })?;
    let peak = first_peak(&worst.window_counts)?;
    Some((worst, nearest_boundary(peak, report.rule.window), peak))
}

/// The boundary zoom: the worst algorithm's worst client (the one its window-count
/// panel shows) around the window edge nearest its highest count, in every algorithm,
/// read back from this run's `decisions.csv`.
pub fn zoom_chart(report: &RunReport, decisions: &Path) -> Result<ZoomChart, OutputError> {
    let window = report.rule.window;
    let found = worst_edge(report).and_then(|(a, edge, peak)| {
        let key = a.window_key.clone()?;
        Some((key, edge, peak))
    });
    let Some((key, edge, until)) = found else {
        return Ok(ZoomChart {
            title: format!("{}: nothing admitted, nothing to zoom on", report.scenario),
            x_desc: String::new(),
            limit: report.rule.max_requests,
            counter_legend: None,
            lanes: Vec::new(),
        });
    };
    let names: Vec<&str> = report.algorithms.iter().map(|a| a.name.as_str()).collect();
    let frame = ZoomFrame {
        edge,
        window,
        until,
    };
    let mut lanes = read_zoom(decisions, &names, &key, frame)?;
    for (lane, a) in lanes.iter_mut().zip(&report.algorithms) {
        lane.peak = Some(lane_peak(a));
    }
    let counter_legend =
        lanes
            .iter()
            .any(|l| l.counter.is_some())
            .then(|| match &report.deployment {
                Some(d) if d.nodes > 1 => format!(
                    "fixed window's own counters, {} servers added (restart at 0 at the boundary)",
                    d.nodes
                ),
                _ => "fixed window's own counter (restarts at 0 at the boundary)".to_string(),
            });
    Ok(ZoomChart {
        title: format!(
            "{}: the {} boundary up close (limit {})",
            report.scenario,
            human_duration(edge),
            limit_text(report)
        ),
        x_desc: if lanes
            .iter()
            .flat_map(|l| &l.marks)
            .any(|m| m.node.is_some())
        {
            format!(
                "{key}'s requests in order, by time from the {} boundary; the number under \
                 each mark: the server that decided it",
                human_duration(edge)
            )
        } else {
            format!(
                "{key}'s requests in order (each its own column), labelled with their time from the {} boundary",
                human_duration(edge)
            )
        },
        limit: report.rule.max_requests,
        counter_legend,
        lanes,
    })
}

/// What the summary says of `a`'s worst window: `max_in_window`, the client that
/// reached it, and when the client its window counts follow first reached it (when
/// that series reaches it).
fn lane_peak(a: &AlgorithmReport) -> LanePeak {
    let count = a.metrics.max_in_window;
    // The series follows `window_key`: its times are the worst client's only if it is.
    let same_client = a.window_key == a.metrics.worst_key;
    let at = a
        .window_counts
        .iter()
        .find(|s| same_client && s.count == count)
        .map(|s| s.time.as_u64());
    LanePeak {
        count,
        key: a.metrics.worst_key.clone(),
        at_ns: at,
    }
}

/// The animation of the trailing window sliding across the edge where the worst
/// over-admission happened, with each algorithm's count of the client it follows
/// (`None` when nothing was admitted).
pub fn slide_animation(report: &RunReport) -> Option<SlideAnimation> {
    let window = report.rule.window;
    let (_, edge, _) = worst_edge(report)?;
    let series = report
        .algorithms
        .iter()
        .map(|a| SlideSeries {
            algorithm: a.name.clone(),
            points: a
                .window_counts
                .iter()
                .map(|s| (s.time.as_u64(), s.count))
                .collect(),
        })
        .collect();
    Some(SlideAnimation {
        title: format!(
            "{}: the trailing {} window sliding across the {} boundary",
            report.scenario,
            human_duration(window),
            human_duration(edge)
        ),
        edge_ns: edge.as_u64(),
        window_ns: window.as_u64(),
        limit: report.rule.max_requests,
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decision row without a server (no deployment) and without delay.
    fn row(time: Nanos, cost: u64, allowed: bool) -> ReadDecision {
        ReadDecision {
            time,
            cost,
            allowed,
            node: None,
            delay: Nanos::ZERO,
        }
    }

    #[test]
    fn the_nearest_boundary_is_exact_at_the_nanosecond() {
        let w = Nanos::from_secs(10);
        assert_eq!(nearest_boundary(Nanos::new(9_999_999_999), w), w);
        assert_eq!(nearest_boundary(w, w), w);
        assert_eq!(nearest_boundary(Nanos::new(4_999_999_999), w), Nanos::ZERO);
        assert_eq!(
            nearest_boundary(Nanos::from_secs(15), w),
            Nanos::from_secs(20)
        );
    }

    #[test]
    fn a_lane_keeps_the_last_decisions_before_the_edge_and_the_first_after() {
        let (edge, w) = (Nanos::from_secs(10), Nanos::from_secs(10));
        // The peak came before the edge: after it, the first ZOOM_PER_SIDE only.
        let frame = ZoomFrame {
            edge,
            window: w,
            until: Nanos::new(9_999_999_999),
        };
        let mut lane = LaneBuilder::new("fixed_window");
        lane.decide(&row(Nanos::new(1), 1, true), &frame); // counts, but too early to show
        for i in 0..30 {
            lane.decide(&row(Nanos::new(9_000_000_000 + i), 1, i % 2 == 0), &frame);
        }
        for _ in 0..25 {
            lane.decide(&row(edge, 1, true), &frame);
        }
        lane.decide(&row(Nanos::from_secs(15), 1, true), &frame); // the next edge's
        let lane = lane.finish();
        let counter = lane.counter.clone().expect("the fixed window's counter");
        // Its own counter: 16 by the edge (the window [0, 10 s)), then 1, 2, … after.
        assert_eq!(counter[ZOOM_PER_SIDE - 1], 16);
        assert_eq!(counter[ZOOM_PER_SIDE], 1);
        assert_eq!(*counter.last().unwrap(), ZOOM_PER_SIDE as u64);
        let marks = lane.marks;
        assert_eq!(marks.len(), 2 * ZOOM_PER_SIDE);
        assert_eq!(marks[0].offset_ns, -1_000_000_000 + 10);
        assert_eq!(marks[ZOOM_PER_SIDE].offset_ns, 0);
        assert_eq!(
            marks[ZOOM_PER_SIDE - 1].count,
            16,
            "15 of 30 admitted, and 1 at 1 ns"
        );
        assert_eq!(marks.last().unwrap().count, 16 + ZOOM_PER_SIDE as u64);
    }

    #[test]
    fn after_the_edge_the_zoom_goes_on_to_the_peak_and_no_further() {
        let (edge, w) = (Nanos::from_secs(10), Nanos::from_secs(10));
        let until = Nanos::new(10_000_000_000 + 39);
        let frame = ZoomFrame {
            edge,
            window: w,
            until,
        };
        let mut lane = LaneBuilder::new("gcra");
        for i in 0..100 {
            lane.decide(&row(Nanos::new(10_000_000_000 + i), 1, true), &frame);
        }
        let lane = lane.finish();
        assert_eq!(
            lane.counter, None,
            "only the fixed window has a calendar counter"
        );
        assert_eq!(lane.marks.len(), 40, "up to the peak at +39 ns");
        let far = ZoomFrame {
            until: Nanos::from_secs(14),
            ..frame
        };
        let mut lane = LaneBuilder::new("gcra");
        for i in 0..100 {
            lane.decide(&row(Nanos::new(10_000_000_000 + i), 1, true), &far);
        }
        assert_eq!(lane.finish().marks.len(), ZOOM_AFTER_MAX);
    }
}
