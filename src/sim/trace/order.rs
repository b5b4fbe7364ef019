//! Putting requests in time order: the bounded `reorder` buffer, the optional spread of
//! each second's requests over that second, and the origin that becomes t = 0.
//!
//! Requests go in in file order and come out sorted by (time, file order). The buffer
//! holds only the requests within `reorder` of the latest time seen, and one second's
//! requests when spreading, never the file. This module parses nothing.

use std::collections::VecDeque;

use super::extract::Request;
use super::options::SameSecond;
use super::timestamp::Stamp;
use crate::time::{NANOS_PER_SEC, Nanos};

const NS: i128 = NANOS_PER_SEC as i128;

/// The latest time seen, for the message about a line too far before it.
struct Latest {
    stamp: Stamp,
    /// The time as written, for absolute times (relative ones are shown from `stamp`).
    /// One buffer, rewritten in place: no allocation per line.
    written: String,
}

/// Sorts requests that are at most `reorder` out of order, and spreads seconds.
pub(super) struct Sorter {
    reorder: i128,
    absolute: bool,
    same_second: SameSecond,
    /// Sorted by (time, file order).
    held: VecDeque<Request>,
    latest: Option<Latest>,
    /// Sorted requests of the second being gathered (spread only).
    second: Vec<Request>,
    /// Sorted, spread requests ready to go out.
    ready: VecDeque<Request>,
}

impl Sorter {
    /// `absolute`: times are instants (shown as written), not run offsets.
    pub(super) fn new(reorder: Nanos, same_second: SameSecond, absolute: bool) -> Sorter {
        Sorter {
            reorder: i128::from(reorder.as_u64()),
            absolute,
            same_second,
            held: VecDeque::new(),
            latest: None,
            second: Vec::new(),
            ready: VecDeque::new(),
        }
    }

    /// Takes the next request in file order, or says how far out of order it is.
    pub(super) fn push(&mut self, request: Request, time_field: &str) -> Result<(), String> {
        if let Some(latest) = &self.latest
            && request.stamp < latest.stamp.saturating_sub(self.reorder)
        {
            return Err(self.too_early(&request, latest, time_field));
        }
        if self.latest.as_ref().is_none_or(|l| request.stamp > l.stamp) {
            let latest = self.latest.get_or_insert_with(|| Latest {
                stamp: request.stamp,
                written: String::new(),
            });
            latest.stamp = request.stamp;
            if self.absolute {
                latest.written.clear();
                latest.written.push_str(&request.time_text);
            }
        }
        let held = request;
        // Sorted by (time, file order): a later line goes after every held one of the
        // same time or earlier, which for a sorted log is the back.
        match self.held.back() {
            Some(last) if last.stamp > held.stamp => {
                let at = self.held.partition_point(|h| h.stamp <= held.stamp);
                self.held.insert(at, held);
            }
            _ => self.held.push_back(held),
        }
        let settled = self
            .latest
            .as_ref()
            .map_or(Stamp::MIN, |l| l.stamp.saturating_sub(self.reorder));
        while self.held.front().is_some_and(|h| h.stamp <= settled) {
            if let Some(h) = self.held.pop_front() {
                self.settle(h);
            }
        }
        Ok(())
    }

    fn too_early(&self, request: &Request, latest: &Latest, time_field: &str) -> String {
        let text = &request.time_text;
        let shown = if self.absolute {
            latest.written.clone()
        } else {
            Nanos::saturating_from_u128(u128::try_from(latest.stamp).unwrap_or(0)).to_decimal_secs()
        };
        if self.reorder == 0 {
            return format!(
                "{time_field} {text} is earlier than the previous row's {shown}; expected rows \
                 sorted by time (or a `reorder` buffer)"
            );
        }
        let gap = Nanos::saturating_from_u128(
            u128::try_from(latest.stamp.saturating_sub(request.stamp)).unwrap_or(0),
        );
        let reorder = Nanos::saturating_from_u128(u128::try_from(self.reorder).unwrap_or(0));
        format!(
            "{time_field} {text} is {gap} earlier than a previous line's {shown}, more out of \
             order than `reorder` ({reorder}) allows"
        )
    }

    /// The end of the file: everything held is settled.
    pub(super) fn finish(&mut self) {
        while let Some(h) = self.held.pop_front() {
            self.settle(h);
        }
        self.flush_second();
    }

    /// The next sorted request, if one is ready.
    pub(super) fn pop(&mut self) -> Option<Request> {
        self.ready.pop_front()
    }

    /// A request no later line can precede.
    fn settle(&mut self, request: Request) {
        if self.same_second == SameSecond::Keep {
            self.ready.push_back(request);
            return;
        }
        let second = |r: &Request| r.stamp.div_euclid(NS);
        if self
            .second
            .first()
            .is_some_and(|f| second(f) != second(&request))
        {
            self.flush_second();
        }
        self.second.push(request);
    }

    /// Spreads the gathered second's `n` requests: the `i`-th at `second + i·1s/n`.
    fn flush_second(&mut self) {
        let n = self.second.len() as i128;
        for (i, mut request) in self.second.drain(..).enumerate() {
            let start = request.stamp.div_euclid(NS) * NS;
            request.stamp = start.saturating_add((i as i128) * NS / n);
            self.ready.push_back(request);
        }
    }
}

/// Turns trace times into run times: t = stamp − origin, where the origin is given,
/// or is the first (earliest) request's instant, or 0 for run offsets.
pub(super) struct Origin {
    origin: Option<Stamp>,
    absolute: bool,
}

impl Origin {
    pub(super) fn new(origin: Option<Stamp>, absolute: bool) -> Origin {
        Origin { origin, absolute }
    }

    /// The absolute instant that is t = 0, once known (given, or the first request
    /// placed); `None` for run offsets, which have no instant.
    pub(super) fn instant(&self) -> Option<Stamp> {
        self.origin.filter(|_| self.absolute)
    }

    /// The run time of `request`, or why it has none.
    pub(super) fn place(&mut self, request: &Request) -> Result<Nanos, String> {
        let origin = if self.absolute {
            *self.origin.get_or_insert(request.stamp)
        } else {
            0
        };
        let offset = request.stamp.saturating_sub(origin);
        if offset < 0 {
            return Err(format!(
                "time {} is before the trace's `origin`; expected every request at or after it",
                request.time_text
            ));
        }
        match u64::try_from(offset) {
            Ok(ns) => Ok(Nanos::new(ns)),
            _ => Err(format!(
                "time {} is more than 584 years after the trace's origin",
                request.time_text
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request of `key` at `stamp` ns, its time written as `text`.
    fn request(stamp: Stamp, key: &str, text: &str) -> Request {
        Request {
            stamp,
            key: key.to_string(),
            cost: None,
            line: 1,
            time_text: text.to_string(),
        }
    }

    fn drain(sorter: &mut Sorter) -> Vec<String> {
        std::iter::from_fn(|| sorter.pop()).map(|r| r.key).collect()
    }

    #[test]
    fn requests_at_one_instant_leave_in_file_order() {
        let mut sorter = Sorter::new(Nanos::from_secs(5), SameSecond::Keep, false);
        let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        for (i, key) in keys.iter().enumerate() {
            // Two instants, interleaved in the file.
            let stamp = if i % 3 == 0 { 2 * NS } else { NS };
            sorter.push(request(stamp, key, "t"), "t").unwrap();
        }
        sorter.finish();
        let want: Vec<String> = keys
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 != 0)
            .chain(keys.iter().enumerate().filter(|(i, _)| i % 3 == 0))
            .map(|(_, k)| k.clone())
            .collect();
        assert_eq!(drain(&mut sorter), want);
    }

    #[test]
    fn a_line_too_early_is_compared_with_the_first_line_that_reached_the_latest_time() {
        // The same instant written two ways: the message quotes the line that first
        // reached it.
        let mut sorter = Sorter::new(Nanos::ZERO, SameSecond::Keep, true);
        let at = |s: i128| s * NS;
        sorter.push(request(at(10), "a", "10"), "t").unwrap();
        sorter.push(request(at(12), "b", "12.0"), "t").unwrap();
        sorter.push(request(at(12), "c", "12"), "t").unwrap();
        let err = sorter.push(request(at(11), "d", "11"), "t").unwrap_err();
        assert!(
            err.starts_with("t 11 is earlier than the previous row's 12.0;"),
            "{err}"
        );
    }
}
