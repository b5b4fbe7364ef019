//! One request attempt and the answer it got, and what one algorithm's run records of
//! them: the decision counters, the trailing-window counts (and the thinned series of one
//! key's count), the timeline, the decision rows sent to the sink, and the words for a
//! `--key` that named no client of the run.
//!
//! Plain data and observation: nothing here decides, orders or delays an attempt. It
//! imports nothing else from the engine, so every other engine file may use it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::registry::edit_distance;
use crate::sim::metrics::{BucketCursor, Lane, SeriesThinner, WindowTracker};
use crate::sim::traffic::Arrival;
use crate::sim::{AlgorithmReport, DecisionRow, DecisionSink, KeyTable, Metrics, Scenario};
use crate::sim::{RuleMetrics, SimError, Timeline};
use crate::time::Nanos;

/// One request attempt: a new arrival, or a retry waiting in the driver's `EventQueue`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Event {
    pub(super) time: Nanos,
    pub(super) seq: u64,
    pub(super) key: u32,
    pub(super) cost: u64,
    pub(super) attempt: u32,
    /// When the request first arrived (for latency).
    pub(super) first: Nanos,
}

impl Event {
    /// The first attempt of the stream's arrival number `seq`.
    #[inline]
    pub(super) fn arrival(seq: u64, a: Arrival) -> Event {
        Event {
            time: a.time,
            seq,
            key: a.key,
            cost: a.cost,
            attempt: 0,
            first: a.time,
        }
    }
}

/// What the driver's step needs of one decision: admitted or not, and the advice a
/// retrying client or the judge reads. Two scalars, so it comes back from a call in
/// two registers (a struct of three fields, even of 16 bytes, is returned through
/// memory); the rest of the answer (the row's fields, [`Answer`]) is read from the
/// decider only when the sink wants rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Verdict {
    /// The advertised wait (zero when admitted, and for a cost that never fits).
    wait: Nanos,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Admitted,
    Denied,
    /// Denied: the cost exceeds the capacity, so it never passes.
    NeverFits,
}

impl Verdict {
    /// A request that fits: admitted (`wait` zero) or denied with the advice `wait`.
    #[inline]
    pub(super) fn fitting(allowed: bool, wait: Nanos) -> Verdict {
        let kind = if allowed {
            Kind::Admitted
        } else {
            Kind::Denied
        };
        Verdict { wait, kind }
    }

    /// A request whose cost exceeds the capacity: denied, never to pass.
    #[inline]
    pub(super) fn never_fits() -> Verdict {
        Verdict {
            wait: Nanos::ZERO,
            kind: Kind::NeverFits,
        }
    }

    #[inline]
    pub(super) fn allowed(self) -> bool {
        self.kind == Kind::Admitted
    }

    /// The advertised wait, as [`Answer::retry_after`] says it.
    #[inline]
    pub(super) fn retry_after(self) -> Option<Nanos> {
        (self.kind != Kind::NeverFits).then_some(self.wait)
    }

    /// The verdict within a whole answer.
    #[inline]
    pub(super) fn of(answer: &Answer) -> Verdict {
        match answer.retry_after {
            Some(wait) => Verdict::fitting(answer.allowed, wait),
            None => Verdict::never_fits(),
        }
    }
}

/// The limiter's whole answer to one request attempt: the row's fields.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answer {
    pub(super) allowed: bool,
    pub(super) remaining: u64,
    /// The advertised wait, zero when allowed; `None` when the request can never pass
    /// (its cost exceeds the capacity), as the algorithm's `retry_after` says it and as
    /// `decisions.csv` writes it. A request that fits may still be told `Nanos::MAX`:
    /// a real wait, past the end of the clock's range (a window of centuries).
    pub(super) retry_after: Option<Nanos>,
    /// How long a shaper held an admitted request back (`Outcome::Delayed`); zero for
    /// an immediate admission and for a denial.
    pub(super) delay: Nanos,
    /// A denial: which of the scenario's rules denied it (0 = the first `[[limit]]`;
    /// always 0 with one rule). `None` when admitted.
    pub(super) denied_by: Option<u32>,
    /// Under a `[deployment]`, the server that decided it; `None` otherwise.
    pub(super) node: Option<u32>,
}

/// The counters, window counts and timeline of one algorithm's run.
pub(super) struct Recording {
    /// The counters; the other metrics are filled in when the run ends.
    pub(super) m: Metrics,
    /// Who counts the admissions in the first rule's trailing windows.
    counting: Counting,
    /// The trailing-window counts of each further `[[limit]]`, against its own window
    /// and limit (no series: the charts follow the first rule).
    extra: Vec<WindowTracker>,
    /// How long each delayed admission was held back, in ns (exact percentiles).
    delays: Vec<u64>,
    series: SeriesThinner,
    /// `(key, instant, cost)` of each admission not yet counted by its trackers.
    admitted: Vec<(u32, Nanos, u64)>,
    /// Admissions a shaper delayed, and every admission after one while any waits:
    /// `(instant it passes, order of admission, key, cost)`. The window counts take
    /// them at the instant they pass, once no later decision can pass before them.
    delayed: BinaryHeap<Reverse<(Nanos, u64, u32, u64)>>,
    /// How many admissions went to `delayed` (ties pass in admission order).
    delayed_order: u64,
    /// The latest attempt's instant: nothing decided later passes before it.
    clock: Nanos,
    timeline: Timeline,
    timeline_cursor: BucketCursor,
    /// Per key: it has seen a denial (counted once in `clients_denied`).
    denied_keys: Vec<bool>,
    /// Keep the window-count series and the timeline (a sweep does not: it reports
    /// metrics only, for hundreds of runs at once).
    keep_series: bool,
}

/// Who counts a run's admissions in the first rule's trailing windows.
enum Counting {
    /// The run's own tracker.
    Own(WindowTracker),
    /// Its group's `stream::GroupCount`, from the run's decisions on the stream; the run
    /// is finished with what its lane found.
    Group,
}

/// A run's measurements once it is over, and what decides whether a second pass must
/// redraw the worst key's window count.
pub(super) struct Outcome {
    pub(super) report: AlgorithmReport,
    pub(super) worst: Option<u32>,
    pub(super) tracked_max: u64,
    /// The key the series followed.
    pub(super) tracked: Option<u32>,
    /// The key `--key` asked for, found in the run (`Err`: its name and a hint).
    pub(super) wanted: Option<Result<u32, (String, String)>>,
}

impl Recording {
    /// `track`: the key whose window count to draw; `None` = the first key admitted.
    /// Without `keep_series`, the series and the timeline stay empty (and take no
    /// memory); every metric is the same. With `by_group`, the run's group counts its
    /// admissions in the first rule's windows (see `stream::GroupCount`).
    pub(super) fn new(
        sc: &Scenario,
        name: &str,
        track: Option<u32>,
        keep_series: bool,
        by_group: bool,
    ) -> Recording {
        let rule = sc.rule;
        let span = if keep_series {
            sc.duration
        } else {
            Nanos::ZERO
        };
        let timeline = Timeline::new(span);
        let counting = if by_group {
            Counting::Group
        } else {
            let mut tracker = WindowTracker::new(rule.window(), rule.max_requests());
            if let Some(key) = track {
                tracker.track(key);
            }
            Counting::Own(tracker)
        };
        Recording {
            m: Metrics {
                algorithm: name.to_string(),
                limit_max_requests: rule.max_requests(),
                limit_window_ns: rule.window().as_u64(),
                limit_burst: rule.burst(),
                ..Metrics::default()
            },
            counting,
            extra: sc
                .extra_limits
                .iter()
                .map(|r| WindowTracker::new(r.window(), r.max_requests()))
                .collect(),
            delays: Vec::new(),
            series: SeriesThinner::new(span),
            admitted: Vec::new(),
            delayed: BinaryHeap::new(),
            delayed_order: 0,
            clock: Nanos::ZERO,
            timeline_cursor: BucketCursor::new(timeline.bucket),
            timeline,
            denied_keys: Vec::new(),
            keep_series,
        }
    }

    /// Counts one decided attempt; an admitted one reaches the service at `passes`
    /// (its instant, unless a shaper delayed it).
    ///
    /// Always inlined: called once per decision, and left out of line it saves and
    /// restores its registers on every call (callgrind: 2,957 M → 2,783 M instructions
    /// for a 100 s cut of `scale_1_key`; docs/performance.md).
    #[inline(always)]
    pub(super) fn attempt(&mut self, event: &Event, allowed: bool, passes: Nanos) {
        self.clock = self.clock.max(event.time);
        let m = &mut self.m;
        m.attempts += 1;
        if event.attempt == 0 {
            m.requests += 1;
        }
        let bucket = self.timeline_cursor.index(event.time);
        self.timeline.record_in(bucket, allowed);
        if allowed {
            m.allowed += 1;
            if passes > event.time {
                m.delayed += 1;
                self.delays.push((passes - event.time).as_u64());
            }
            if passes == event.time && self.delayed.is_empty() {
                if matches!(self.counting, Counting::Own(_)) {
                    self.admitted.push((event.key, event.time, event.cost));
                }
            } else {
                self.delayed_order += 1;
                let entry = (passes, self.delayed_order, event.key, event.cost);
                self.delayed.push(Reverse(entry));
            }
        } else {
            m.denied += 1;
            if event.attempt == 0 {
                m.requests_denied += 1;
            }
            self.denied_key(event.key);
        }
    }

    /// Counts `key` in `clients_denied` the first time it is denied.
    #[inline]
    fn denied_key(&mut self, key: u32) {
        let i = key as usize;
        if i >= self.denied_keys.len() {
            self.denied_keys.resize(i + 1, false);
        }
        if !self.denied_keys[i] {
            self.denied_keys[i] = true;
            self.m.clients_denied += 1;
        }
    }

    /// Counts the admissions of the last chunk in the trailing windows, in order. Done
    /// after the chunk rather than at each decision: the tracker only observes, and a
    /// short loop of independent counter updates lets the processor overlap their
    /// cache misses, which interleaved with decisions it could not.
    pub(super) fn track_admitted(&mut self) {
        let keep = self.keep_series;
        let series = &mut self.series;
        if let Counting::Own(tracker) = &mut self.counting {
            tracker.admit_all(&self.admitted, |t, c| {
                if keep {
                    series.push(t, c);
                }
            });
        }
        for tracker in &mut self.extra {
            tracker.admit_all(&self.admitted, |_, _| {});
        }
        self.admitted.clear();
        self.pass_delayed(self.clock, true);
    }

    /// Counts the delayed admissions that pass at or before `until` (`inclusive`) or
    /// before it, in the order they pass.
    fn pass_delayed(&mut self, until: Nanos, inclusive: bool) {
        let keep = self.keep_series;
        // A group counts only runs whose every admission passes at its instant.
        let Counting::Own(own) = &mut self.counting else {
            return;
        };
        while let Some(&Reverse((at, _, key, cost))) = self.delayed.peek() {
            if at > until || (at == until && !inclusive) {
                break;
            }
            self.delayed.pop();
            let series = &mut self.series;
            own.admit(key, at, cost, |t, c| {
                if keep {
                    series.push(t, c);
                }
            });
            for tracker in &mut self.extra {
                tracker.admit(key, at, cost, |_, _| {});
            }
        }
    }

    /// The run is over: the window metrics, the series and the timeline. `counted` is
    /// what its lane of the group's count found, for a run counted by its group.
    pub(super) fn finish(
        mut self,
        sc: &Scenario,
        name: String,
        keys: &KeyTable,
        counted: Option<Counted>,
    ) -> Outcome {
        // A request delayed past the end of the run never reached the service in it.
        self.pass_delayed(sc.duration, false);
        let wanted = sc.chart_key.as_deref().map(|k| {
            keys.id(k)
                .ok_or_else(|| (k.to_string(), unknown_key_hint(k, keys)))
        });
        let Recording {
            mut m,
            counting,
            extra,
            mut delays,
            mut series,
            timeline,
            keep_series,
            ..
        } = self;
        [m.delay_p50_ns, m.delay_p99_ns, m.delay_max_ns] =
            crate::sim::metrics::delay_percentiles(&mut delays);
        let tracker = match counting {
            Counting::Own(mut tracker) => {
                tracker.finish(sc.duration, |t, c| {
                    if keep_series {
                        series.push(t, c);
                    }
                });
                tracker.lane(0)
            }
            Counting::Group => {
                let counted =
                    counted.expect("a run counted by its group is finished with its lane");
                series = counted.series;
                counted.lane
            }
        };
        m.max_in_window = tracker.max;
        // The worst key is the one whose series `window_counts` shows: the tracked key
        // when it ties with the first key to reach the maximum (no second pass then),
        // otherwise that first key (the second pass redraws the series for it).
        let shown = match tracker.tracked {
            Some(k) if tracker.tracked_max == tracker.max && tracker.max > 0 => Some(k),
            _ => tracker.worst_key,
        };
        m.worst_key = shown.map(|k| keys.name(k).to_string());
        m.over_admission = tracker.max as f64 / sc.rule.max_requests() as f64;
        m.excess = tracker.excess;
        m.rule = crate::sim::rule_label(&sc.rule);
        m.rules = per_rule(&m, sc, &extra, keys);
        m.allow_rate = (m.attempts > 0).then(|| m.allowed as f64 / m.attempts as f64);
        m.requests_denied_share =
            (m.requests > 0).then(|| m.requests_denied as f64 / m.requests as f64);
        Outcome {
            report: AlgorithmReport {
                name,
                metrics: m,
                window_counts: series.finish(),
                window_key: tracker.tracked.map(|k| keys.name(k).to_string()),
                timeline,
                nodes: Vec::new(),
            },
            worst: tracker.worst_key,
            tracked_max: tracker.tracked_max,
            tracked: tracker.tracked,
            wanted,
        }
    }
}

/// What one lane of a group's count (`stream::GroupCount`) found, for its run's
/// [`Recording::finish`].
pub(super) struct Counted {
    lane: Lane,
    series: SeriesThinner,
}

impl Counted {
    /// `lane`'s results, with the series of its tracked key's count.
    pub(super) fn new(lane: Lane, series: SeriesThinner) -> Counted {
        Counted { lane, series }
    }
}

/// Every rule's window metrics, in the scenario's order: the first is `m`'s own; each
/// further `[[limit]]` is measured by its tracker in `extra`.
fn per_rule(
    m: &Metrics,
    sc: &Scenario,
    extra: &[WindowTracker],
    keys: &KeyTable,
) -> Vec<RuleMetrics> {
    let first = RuleMetrics {
        rule: m.rule.clone(),
        max_in_window: m.max_in_window,
        worst_key: m.worst_key.clone(),
        over_admission: m.over_admission,
        excess: m.excess,
        limit_max_requests: m.limit_max_requests,
        limit_window_ns: m.limit_window_ns,
        limit_burst: m.limit_burst,
    };
    let others = sc
        .extra_limits
        .iter()
        .zip(extra)
        .map(|(rule, t)| RuleMetrics {
            rule: crate::sim::rule_label(rule),
            max_in_window: t.lane(0).max,
            worst_key: t.lane(0).worst_key.map(|k| keys.name(k).to_string()),
            over_admission: t.lane(0).max as f64 / rule.max_requests() as f64,
            excess: t.lane(0).excess,
            limit_max_requests: rule.max_requests(),
            limit_window_ns: rule.window().as_u64(),
            limit_burst: rule.burst(),
        });
    std::iter::once(first).chain(others).collect()
}

/// The decision rows of one algorithm's run, on their way to its sink.
pub(super) struct DecisionLog {
    /// The algorithm's name, as rows and errors show it.
    pub(super) name: String,
    /// `None` for the silent second pass.
    sink: Option<Box<dyn DecisionSink>>,
    /// The sink wants each decision's row.
    rows: bool,
    /// Each rule's label (`10/1s`), in the scenario's order, for `denied_by`.
    rules: Vec<String>,
}

impl DecisionLog {
    pub(super) fn new(
        name: String,
        sink: Option<Box<dyn DecisionSink>>,
        sc: &Scenario,
    ) -> DecisionLog {
        DecisionLog {
            name,
            rows: sink.as_ref().is_some_and(|s| s.wants_rows()),
            sink,
            rules: std::iter::once(&sc.rule)
                .chain(&sc.extra_limits)
                .map(crate::sim::rule_label)
                .collect(),
        }
    }

    /// Sends the row of one decision, if the sink wants rows; `answer` gives the row's
    /// fields, and is called only then. The check is inlined into the driver's step and
    /// the row is written out of line: a run without rows pays one branch a decision
    /// (a call per decision, taking the answer by reference, cost the step about 3%
    /// more instructions on `scale_1_key`, counted with callgrind).
    #[inline(always)]
    pub(super) fn record(
        &mut self,
        event: &Event,
        keys: &KeyTable,
        answer: impl FnOnce() -> Answer,
    ) -> Result<(), SimError> {
        if !self.rows {
            return Ok(());
        }
        self.write_row(event, &answer(), keys)
    }

    /// Builds the row of one decision and sends it to the sink.
    #[inline(never)]
    fn write_row(
        &mut self,
        event: &Event,
        answer: &Answer,
        keys: &KeyTable,
    ) -> Result<(), SimError> {
        let Some(sink) = self.sink.as_mut() else {
            return Ok(());
        };
        let row = DecisionRow {
            algorithm: &self.name,
            seq: event.seq,
            attempt: event.attempt,
            time: event.time,
            key: keys.name(event.key),
            cost: event.cost,
            allowed: answer.allowed,
            remaining: answer.remaining,
            retry_after: answer.retry_after,
            delay: answer.delay,
            node: answer.node,
            denied_by: denied_by(&self.rules, answer),
        };
        sink.record(&row).map_err(|source| self.error(source))
    }

    /// Flushes the sink, so a failed write is an error rather than lost on drop.
    pub(super) fn finish(&mut self) -> Result<(), SimError> {
        match self.sink.as_mut() {
            Some(sink) => sink.finish().map_err(|source| self.error(source)),
            None => Ok(()),
        }
    }

    fn error(&self, source: std::io::Error) -> SimError {
        SimError::Sink {
            algorithm: self.name.clone(),
            source,
        }
    }
}

/// The label of the rule (of `rules`) that denied `answer`: the one it names, or the
/// only one.
fn denied_by<'r>(rules: &'r [String], answer: &Answer) -> Option<&'r str> {
    if answer.allowed {
        return None;
    }
    let only = (rules.len() == 1).then_some(0);
    let i = answer.denied_by.or(only)?;
    rules.get(i as usize).map(String::as_str)
}

/// What to say when `--key` names no client of the run: up to three close names, or
/// else examples of the names there are.
pub(super) fn unknown_key_hint(key: &str, keys: &KeyTable) -> String {
    let mut close: Vec<(usize, &str)> = keys
        .names()
        .map(|name| (edit_distance(key, name), name))
        .filter(|&(d, name)| d <= (key.chars().count().max(name.chars().count()) / 3).max(2))
        .collect();
    close.sort();
    let list = |names: Vec<&str>| {
        names
            .into_iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if close.is_empty() {
        let examples: Vec<&str> = keys.names().take(3).collect();
        if examples.is_empty() {
            return "no client sent anything".to_string();
        }
        format!("clients are named like {}", list(examples))
    } else {
        format!(
            "did you mean {}?",
            list(close.into_iter().take(3).map(|c| c.1).collect())
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A delayed admission counts when it passes, not when it arrived, also when it is
    /// the first admission of a chunk (nothing else waits then): two admissions at 0,
    /// then one arriving at 0.1 s that a shaper holds until 1 s. Counted at 1 s, no
    /// trailing second holds more than two; counted at its arrival, (−0.9 s, 0.1 s]
    /// would hold three. (The chunks are ended by hand here, so the test does not
    /// depend on the engine's chunk size.)
    #[test]
    fn a_delayed_admission_first_in_its_chunk_counts_when_it_passes() {
        let text = "name = \"s\"\nduration = \"2s\"\nalgorithms = [\"gcra\"]\n\
                    [limit]\nmax_requests = 2\nwindow = \"1s\"\n\
                    [[traffic]]\nkind = \"uniform\"\nrate = 1\n";
        let sc = Scenario::parse(text, Path::new("s.toml")).unwrap();
        let mut keys = KeyTable::default();
        let key = keys.intern("a");
        let at = |seq, ns| {
            let time = Nanos::new(ns);
            Event::arrival(seq, Arrival { time, key, cost: 1 })
        };
        let mut recording = Recording::new(&sc, "shaper", None, false, false);
        for seq in 0..2 {
            recording.attempt(&at(seq, 0), true, Nanos::ZERO);
        }
        recording.track_admitted(); // the first chunk: both counted, nothing waits
        recording.attempt(&at(2, 100_000_000), true, Nanos::new(1_000_000_000));
        recording.track_admitted(); // the next chunk, whose one admission waits
        let outcome = recording.finish(&sc, "shaper".to_string(), &keys, None);
        let m = &outcome.report.metrics;
        assert_eq!((m.allowed, m.delayed, m.max_in_window), (3, 1, 2));
    }

    #[test]
    fn an_unknown_key_is_answered_with_the_closest_names() {
        let mut keys = KeyTable::default();
        for name in ["client-0", "client-1", "client-12", "admin"] {
            keys.intern(name);
        }
        assert_eq!(
            unknown_key_hint("client-2", &keys),
            "did you mean `client-0`, `client-1`, `client-12`?"
        );
        assert_eq!(
            unknown_key_hint("zzzzzzzzzz", &keys),
            "clients are named like `client-0`, `client-1`, `client-12`"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        // Long names may be a third of their length apart: three edits on fourteen
        // characters is still close, five is not.
        let mut keys = KeyTable::default();
        keys.intern("api-gateway-eu");
        assert_eq!(edit_distance("api-gatewy-us", "api-gateway-eu"), 3);
        assert_eq!(
            unknown_key_hint("api-gatewy-us", &keys),
            "did you mean `api-gateway-eu`?"
        );
        assert_eq!(edit_distance("apigatewayxxxx", "api-gateway-eu"), 5);
        assert_eq!(
            unknown_key_hint("apigatewayxxxx", &keys),
            "clients are named like `api-gateway-eu`"
        );
    }
}
