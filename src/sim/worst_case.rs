//! The worst-case finder: searches arrival streams for the most an algorithm can be made
//! to admit inside one half-open window `(t − W, t]`, and compares it with the analytic
//! bound.
//!
//! The adversary is adaptive: after an idle stretch it bursts at a chosen phase before a
//! window boundary, then keeps asking the moment the algorithm's own `retry_after` says
//! it would pass. That one family reaches every analytic bound (2N for the fixed window,
//! 2N − 1 for the sliding window counter, B + N − 1 for the buckets and GCRA, N for the
//! sliding log); random phases, clump sizes and costs search around it. The search
//! drives the algorithms themselves (no copy of any) and does no I/O.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::algorithm::{Algorithm, BoxedAlgorithm};
use crate::registry::{Registry, UnknownAlgorithm};
use crate::rule::Rule;
use crate::time::Nanos;

/// One request of a stream: when, and its cost.
pub type Request = (Nanos, u64);

/// The most an algorithm admitted in one window, and the stream that made it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorstCase {
    /// Registry name.
    pub algorithm: String,
    /// The analytic bound (by cost), if known for this algorithm.
    pub analytic: Option<u64>,
    /// The most admitted (by cost) in any `(t − W, t]`, found by the search.
    pub max_in_window: u64,
    /// `max_in_window / max_requests`.
    pub over_admission: f64,
    /// Every request of the winning stream (admitted or not), in time order: replayed
    /// open-loop it reproduces the same decisions.
    #[serde(skip)]
    pub stream: Vec<Request>,
}

/// How hard to search.
#[derive(Debug, Clone, Copy)]
pub struct SearchOptions {
    /// Randomised trials after the systematic constructions.
    pub trials: u32,
    /// Seed of the randomised trials.
    pub seed: u64,
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions {
            trials: 300,
            seed: 1,
        }
    }
}

/// The most cost admitted in any half-open window `(t − W, t]` of `admitted` (sorted by
/// time). Two pointers: O(n).
pub fn max_in_window(admitted: &[Request], window: Nanos) -> u64 {
    let w = u128::from(window.as_u64());
    let (mut start, mut sum, mut best) = (0, 0u128, 0u128);
    for &(t, cost) in admitted {
        sum += u128::from(cost);
        while u128::from(admitted[start].0.as_u64()) + w <= u128::from(t.as_u64()) {
            sum -= u128::from(admitted[start].1);
            start += 1;
        }
        best = best.max(sum);
    }
    u64::try_from(best).unwrap_or(u64::MAX)
}

/// One adversarial plan: stay idle until `burst_at`, send `burst` requests of `cost`
/// there, then ask greedily (at every advertised `retry_after`) until `until`.
#[derive(Debug, Clone, Copy)]
struct Plan {
    burst_at: Nanos,
    burst: u64,
    cost: u64,
    until: Nanos,
}

/// Runs `plan` against a fresh state; returns every request sent and the admitted ones.
fn play<A: Algorithm>(a: &A, plan: Plan) -> (Vec<Request>, Vec<Request>) {
    let mut state = a.new_state(Nanos::ZERO);
    let (mut sent, mut admitted) = (Vec::new(), Vec::new());
    let mut now = plan.burst_at;
    for _ in 0..plan.burst {
        sent.push((now, plan.cost));
        if a.try_acquire(&mut state, now, plan.cost) {
            admitted.push((now, plan.cost));
        }
    }
    // Greedy tail; bounded so a pathological rule cannot loop for long. Two windows
    // of it admit up to the capacity plus twice the rate, so the bound counts the
    // larger of the two: a bucket's burst may be far below its rate.
    let most = a.capacity().max(a.rule().max_requests());
    for _ in 0..4 * most.min(1 << 16) + 8 {
        let Some(wait) = a.retry_after(&state, now, plan.cost) else {
            break;
        };
        now = now + wait;
        if now >= plan.until {
            break;
        }
        sent.push((now, plan.cost));
        if a.try_acquire(&mut state, now, plan.cost) {
            admitted.push((now, plan.cost));
        } else {
            break; // retry_after lied; the stream so far still counts
        }
    }
    (sent, admitted)
}

/// The largest `max_requests` or `burst` the search takes: its streams hold one entry
/// per request (a few times the limit), and its greedy tails are bounded for speed.
pub const MAX_SEARCHED_LIMIT: u64 = 100_000;

/// Why a search could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// An unknown algorithm name.
    #[error(transparent)]
    Algorithm(#[from] UnknownAlgorithm),
    /// A limit too large to search exhaustively in memory.
    #[error(
        "a limit of {0} requests is too large to search; expected at most {MAX_SEARCHED_LIMIT} (max_requests and burst)"
    )]
    TooLarge(u64),
}

/// Searches for the worst case of the algorithm called `algorithm` in `registry` under
/// `rule`, beside the bound the registry knows for it.
pub fn search(
    registry: &Registry,
    algorithm: &str,
    rule: Rule,
    options: SearchOptions,
) -> Result<WorstCase, SearchError> {
    let largest = rule.max_requests().max(rule.burst());
    if largest > MAX_SEARCHED_LIMIT {
        return Err(SearchError::TooLarge(largest));
    }
    let entry = registry.entry(algorithm)?;
    let a: BoxedAlgorithm = entry.create(rule);
    Ok(WorstCase {
        analytic: entry.worst_case(&rule),
        ..search_with(&a, options)
    })
}

/// Searches for the worst case of any algorithm (`analytic` is left `None`: only a
/// registry entry knows a bound).
pub fn search_with<A: Algorithm>(a: &A, options: SearchOptions) -> WorstCase {
    let rule = *a.rule();
    let w = rule.window().as_u64();
    // Start a few windows in, on a boundary, so every phase before it exists.
    let boundary = w.saturating_mul(4);
    let capacity = a.capacity();
    let until = |at: u64| Nanos::new(at.saturating_add(w.saturating_mul(2)));
    let plan = |phase: u64, burst: u64, cost: u64| {
        let at = boundary.saturating_sub(phase);
        Plan {
            burst_at: Nanos::new(at),
            burst,
            cost,
            until: until(at),
        }
    };
    let mut plans = Vec::new();
    for phase in [1, 0, w / 2, w.saturating_sub(1), w / 4] {
        plans.push(plan(phase, capacity, 1));
        plans.push(plan(phase, rule.max_requests().min(capacity), 1));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    for _ in 0..options.trials {
        let phase = match rng.random_range(0..3u8) {
            0 => rng.random_range(0..=3u64),
            1 => rng.random_range(0..=w),
            _ => w.saturating_sub(rng.random_range(0..=3u64)),
        };
        let cost = if rng.random_bool(0.7) {
            1
        } else {
            rng.random_range(1..=capacity.min(1 << 20))
        };
        let burst = rng.random_range(0..=capacity.div_ceil(cost).min(1 << 16));
        plans.push(plan(phase, burst, cost));
    }
    let mut best: Option<(u64, Vec<Request>)> = None;
    for p in plans {
        let (sent, admitted) = play(a, p);
        let found = max_in_window(&admitted, rule.window());
        if best.as_ref().is_none_or(|(b, _)| found > *b) {
            best = Some((found, sent));
        }
    }
    let (found, stream) = best.unwrap_or_default();
    WorstCase {
        algorithm: a.name().to_string(),
        analytic: None,
        max_in_window: found,
        over_admission: found as f64 / rule.max_requests() as f64,
        stream,
    }
}

/// The winning stream as a trace CSV (`time_s,key,cost`), exact decimal seconds.
pub fn trace_csv(case: &WorstCase) -> String {
    let mut out = String::from("time_s,key,cost\n");
    for (t, cost) in &case.stream {
        out.push_str(&format!("{},adversary,{cost}\n", t.to_decimal_secs()));
    }
    out
}

/// A scenario that replays `trace_file` (a path relative to the scenario) against
/// `case.algorithm` under `rule`. Durations are written in their shortest exact form
/// (`"10s"`, not `"10000000000ns"`), which the scenario parser reads back exactly.
pub fn replay_scenario(case: &WorstCase, rule: &Rule, trace_file: &str) -> String {
    let end = case.stream.last().map_or(Nanos::ZERO, |(t, _)| *t) + Nanos::new(1);
    let burst = if rule.burst() == rule.max_requests() {
        String::new()
    } else {
        format!("burst = {}\n", rule.burst())
    };
    format!(
        "name = \"worst_case_{name}\"\n\
         description = \"The worst case found for {name} under {max} per {window}: {found} admitted in one window.\"\n\
         duration = \"{end}\"\n\
         algorithms = [\"{name}\", \"sliding_window_log\"]\n\n\
         [limit]\nmax_requests = {max}\nwindow = \"{window}\"\n{burst}\n\
         [[traffic]]\nkind = \"trace\"\npath = \"{trace_file}\"\n",
        name = case.algorithm,
        max = rule.max_requests(),
        window = rule.window(),
        found = case.max_in_window,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_force(admitted: &[Request], window: Nanos) -> u64 {
        admitted
            .iter()
            .map(|&(t, _)| {
                admitted
                    .iter()
                    .filter(|&&(s, _)| {
                        s <= t
                            && u128::from(s.as_u64()) + u128::from(window.as_u64())
                                > u128::from(t.as_u64())
                    })
                    .map(|&(_, c)| c)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn max_in_window_matches_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..300 {
            let mut t = 0u64;
            let stream: Vec<Request> = (0..rng.random_range(0..40))
                .map(|_| {
                    t += rng.random_range(0..15u64);
                    (Nanos::new(t), rng.random_range(1..4u64))
                })
                .collect();
            let w = Nanos::new(rng.random_range(1..30u64));
            assert_eq!(
                max_in_window(&stream, w),
                brute_force(&stream, w),
                "{stream:?} W={w:?}"
            );
        }
    }
}
