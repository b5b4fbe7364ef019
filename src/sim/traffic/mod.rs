//! Arrival processes and their lazy, time-ordered merge.
//!
//! Each `[[traffic]]` source yields `(time, key, cost)` arrivals in its own time order,
//! seeded from the scenario seed and its position, so a stream is reproducible. The
//! merge holds one pending arrival per source (never the whole stream). This module
//! knows nothing of algorithms or decisions. It reads a built [`Scenario`] and replays
//! trace files through [`TraceReader`]; neither of those knows this module exists.
//! Which client sends each generated request is decided in [`keys`]; which arrivals a
//! filtered stream keeps, in [`keep`].
//!
//! Floats appear in exactly two places: Poisson gaps (an exponential sample in seconds,
//! rounded to the nearest nanosecond) and Zipf key picks. Everything else is integer.

mod keep;
mod keys;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use super::scenario::{Rate, Scenario, ScenarioError, TrafficKind, TrafficSpec, burst_period};
use super::trace::TraceReader;
use crate::rule::Rule;
use crate::time::Nanos;
use keep::Keep;
use keys::{Draw, KeyPicker};

/// One request arriving: when, from which client (an interned key id), and its cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The instant it arrives.
    pub time: Nanos,
    /// The client, as an id into the stream's [`KeyTable`].
    pub key: u32,
    /// Permits it takes.
    pub cost: u64,
}

/// Key names ↔ dense `u32` ids, so the engine's maps hash small integers.
///
/// A name is stored once, shared (`Arc<str>`): the run's workers copy the producer's
/// table name by name (with `share`) without copying a byte. The name → id index
/// hashes with foldhash, seeded per table, the limiter's hasher.
#[derive(Default, Clone)]
pub struct KeyTable {
    names: Vec<Arc<str>>,
    /// Ids, found by their names' hashes.
    ids: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl std::fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyTable")
            .field("names", &self.names)
            .finish()
    }
}

impl KeyTable {
    /// The id of `name`, assigning the next one on first sight.
    pub fn intern(&mut self, name: &str) -> u32 {
        self.intern_with(name, || Arc::from(name))
    }

    /// [`intern`](Self::intern) of a name another table already holds: a new entry
    /// shares it instead of copying it.
    pub(crate) fn intern_shared(&mut self, name: &Arc<str>) -> u32 {
        self.intern_with(name, || Arc::clone(name))
    }

    fn intern_with(&mut self, name: &str, stored: impl FnOnce() -> Arc<str>) -> u32 {
        let hash = self.hasher.hash_one(name);
        let names = &self.names;
        let entry = self.ids.entry(
            hash,
            |&id| *names[id as usize] == *name,
            |&id| self.hasher.hash_one(&*names[id as usize]),
        );
        match entry {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                // Validation caps every source below u32::MAX keys, but traces could
                // add more; saturate rather than wrap (ids are only labels).
                let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
                e.insert(id);
                self.names.push(stored());
                id
            }
        }
    }

    /// The names of ids `from..`, shared, for another table to
    /// [`intern_shared`](Self::intern_shared) in order.
    pub(crate) fn share(&self, from: usize) -> Arc<[Arc<str>]> {
        self.names.get(from..).unwrap_or_default().into()
    }

    /// The name of key `id` (empty for an unknown id).
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    /// The id of `name`, if it has been seen.
    pub fn id(&self, name: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(name);
        (self.ids)
            .find(hash, |&id| *self.names[id as usize] == *name)
            .copied()
    }

    /// Every name seen, in order of first sight.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// How many keys have been seen.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True before the first key.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The merged arrivals of every source, in time order; ties keep declaration order,
/// then each source's own order.
pub struct ArrivalStream {
    sources: Vec<Source>,
    /// `(time, source index)` of each source's pending arrival.
    heap: BinaryHeap<Reverse<(Nanos, usize)>>,
    pending: Vec<Option<Arrival>>,
    next_seq: u64,
    keys: KeyTable,
}

impl ArrivalStream {
    /// Opens every source of `scenario` (trace files are opened here).
    pub fn new(scenario: &Scenario) -> Result<ArrivalStream, ScenarioError> {
        ArrivalStream::open(scenario, KeyTable::default(), None)
    }

    /// The arrivals of the keys `wanted` only: exactly those the whole stream of
    /// `scenario` yields for them, in the same order, at the same instants, with the
    /// same costs. `keys` is the key table of a whole stream of `scenario`: `wanted`
    /// are ids in it, and it is this stream's table (no key is interned). Sequence
    /// numbers count the arrivals this stream yields.
    ///
    /// The other arrivals of a source that sends to a wanted key are still generated
    /// (its random stream must advance as it does), but their clients are only
    /// compared with the wanted ones, never looked up or named; a source that sends to
    /// none of them is not run. So the engine's silent second pass, which redraws one
    /// key's window count, costs a fraction of a whole stream.
    pub(crate) fn only(
        scenario: &Scenario,
        keys: KeyTable,
        wanted: &[u32],
    ) -> Result<ArrivalStream, ScenarioError> {
        ArrivalStream::open(scenario, keys, Some(wanted))
    }

    fn open(
        scenario: &Scenario,
        keys: KeyTable,
        wanted: Option<&[u32]>,
    ) -> Result<ArrivalStream, ScenarioError> {
        let mut stream = ArrivalStream {
            sources: Vec::new(),
            heap: BinaryHeap::new(),
            pending: Vec::new(),
            next_seq: 0,
            keys,
        };
        for (index, spec) in scenario.traffic.iter().enumerate() {
            // One independent ChaCha stream per source: adding a source never changes
            // the arrivals of the others.
            let mut rng = ChaCha8Rng::seed_from_u64(scenario.seed);
            rng.set_stream(index as u64 + 1);
            let picker = KeyPicker::new(&spec.keys);
            let pattern = Pattern::new(spec, &scenario.rule)?;
            let keep = match wanted {
                None => Keep::All,
                Some(wanted) => Keep::new(spec, &picker, &stream.keys, wanted),
            };
            // A source none of whose clients are wanted need not run at all: its random
            // stream is its own, and a trace was read whole once already.
            let done = keep.is_nothing();
            stream.sources.push(Source {
                pattern,
                picker,
                rng,
                cost: spec.cost,
                start: spec.start,
                end: spec.end,
                done,
                ahead: VecDeque::with_capacity(AHEAD),
                keep,
            });
        }
        for index in 0..stream.sources.len() {
            stream.pending.push(None);
            stream.refill(index)?;
        }
        Ok(stream)
    }

    /// The next arrival and its 0-based sequence number, or `None` at the end.
    pub fn next_arrival(&mut self) -> Result<Option<(u64, Arrival)>, ScenarioError> {
        let Some(Reverse((_, index))) = self.heap.pop() else {
            return Ok(None);
        };
        let Some(arrival) = self.pending[index].take() else {
            return Ok(None); // not reached: the heap and `pending` move together
        };
        self.refill(index)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        Ok(Some((seq, arrival)))
    }

    /// Appends the next arrivals to `chunk` until it holds `max` or the stream ends:
    /// the same arrivals, numbered the same, as [`next_arrival`](Self::next_arrival)
    /// called that many times.
    pub fn fill(
        &mut self,
        chunk: &mut Vec<(u64, Arrival)>,
        max: usize,
    ) -> Result<(), ScenarioError> {
        if self.sources.len() == 1 {
            return self.fill_from_one(chunk, max);
        }
        while chunk.len() < max {
            match self.next_arrival()? {
                Some(arrival) => chunk.push(arrival),
                None => break,
            }
        }
        Ok(())
    }

    /// [`fill`](Self::fill) from the only source: its arrivals are the stream's, in
    /// its order, so they go straight into `chunk` with no merging. As in
    /// `next_arrival`, the source is always one arrival ahead (it is pending, its
    /// client already interned): the one past `max` is generated and kept back (the
    /// pending one itself, when `chunk` was already full).
    fn fill_from_one(
        &mut self,
        chunk: &mut Vec<(u64, Arrival)>,
        max: usize,
    ) -> Result<(), ScenarioError> {
        let Some(first) = self.pending[0].take() else {
            return Ok(());
        };
        self.heap.clear();
        let mut seq = self.next_seq;
        chunk.push((seq, first));
        seq += 1;
        self.sources[0].append(&mut self.keys, chunk, &mut seq, max + 1)?;
        if chunk.len() > max
            && let Some((_, ahead)) = chunk.pop()
        {
            seq -= 1;
            self.heap.push(Reverse((ahead.time, 0)));
            self.pending[0] = Some(ahead);
        }
        self.next_seq = seq;
        Ok(())
    }

    /// The key names seen so far.
    pub fn keys(&self) -> &KeyTable {
        &self.keys
    }

    /// The key table, once the stream is no longer needed.
    pub fn into_keys(self) -> KeyTable {
        self.keys
    }

    fn refill(&mut self, index: usize) -> Result<(), ScenarioError> {
        if let Some(arrival) = self.sources[index].next(&mut self.keys)? {
            self.heap.push(Reverse((arrival.time, index)));
            self.pending[index] = Some(arrival);
        }
        Ok(())
    }
}

/// An exponential gap sampler in seconds for `rate` per second.
fn exp_ns(rate: Rate) -> Exp<f64> {
    // The rate is validated > 0 and finite, which is all `Exp::new` requires; the
    // fallback (one arrival a second) is unreachable.
    Exp::new(rate.as_f64()).unwrap_or_else(|_| Exp::new(1.0).expect("1.0 is a valid rate"))
}

/// A gap sampled in seconds, rounded to the nearest nanosecond (`as` saturates).
#[inline(always)]
fn sample_gap(gap: &Exp<f64>, rng: &mut ChaCha8Rng) -> u64 {
    round_ns(gap.sample(rng) * 1e9)
}

/// `x.round() as u64`, without the call to libm's `round` that baseline x86-64 makes
/// for it (1 % of a generated run). Below 2^52 the truncation `n` is exact and so is
/// the fraction `x − n`, so rounding half away from zero is `n + (x − n ≥ ½)`; every
/// other input (huge, negative, NaN) goes to `round` itself.
#[inline]
fn round_ns(x: f64) -> u64 {
    const EXACT_BELOW: f64 = (1u64 << 52) as f64;
    if (0.0..EXACT_BELOW).contains(&x) {
        // Through `i64`: one conversion instruction each way where `u64` takes
        // several, and exact here (below 2^52).
        let n = x as i64;
        n as u64 + u64::from(x - n as f64 >= 0.5)
    } else {
        x.round() as u64
    }
}

struct Source {
    pattern: Pattern,
    picker: KeyPicker,
    rng: ChaCha8Rng,
    cost: u64,
    start: Nanos,
    end: Nanos,
    done: bool,
    /// Arrivals generated ahead (a source that draws its clients): instants and client
    /// indexes, not yet interned.
    ahead: VecDeque<(Nanos, u32)>,
    /// Which of its arrivals the stream yields.
    keep: Keep,
}

/// Where each kind of source is in its sequence. Offsets are relative to `start`.
enum Pattern {
    Uniform {
        rate: Rate,
        /// The next arrival's index; arrival 0 is at `start` itself, so a source
        /// running for `d` seconds at `r` per second sends exactly `ceil(d·r)`.
        i: u64,
    },
    Poisson {
        gap: Exp<f64>,
        at: u64,
    },
    Burst {
        size: u64,
        spread: u64,
        period: u64,
        /// The boundary index k ≥ 1: the boundary is at k·period.
        boundary: u64,
        /// Every client sends the whole burst: `size` on each side of each boundary.
        clients: u64,
        /// The request within the boundary's burst: 0..size·clients are before the
        /// boundary, size·clients..2·size·clients after; within a half, each position
        /// of the half-burst is taken by every client in turn (client order).
        j: u64,
    },
    OnOff {
        gap: Exp<f64>,
        /// Busy time elapsed, i.e. time with the idle periods cut out.
        busy: u64,
        on: u64,
        off: u64,
    },
    // Boxed: a reader (its reorder buffer, its format) is far larger than the other patterns.
    Trace(Box<TraceReader>),
}

impl Pattern {
    /// Where the source `spec` starts, under `rule` (trace files are opened here).
    fn new(spec: &TrafficSpec, rule: &Rule) -> Result<Pattern, ScenarioError> {
        Ok(match &spec.kind {
            TrafficKind::Uniform { rate } => Pattern::Uniform { rate: *rate, i: 0 },
            TrafficKind::Poisson { rate } => Pattern::Poisson {
                gap: exp_ns(*rate),
                at: 0,
            },
            TrafficKind::BoundaryBurst {
                size,
                spread,
                period,
            } => {
                let period = burst_period(*period, rule).as_u64();
                // Boundaries are absolute multiples of the period (the windows'
                // edges): the first is the one whose half-burst starts at or after
                // the source's `start`.
                let first = (u128::from(spec.start.as_u64()) + 1 + u128::from(spread.as_u64()))
                    .div_ceil(u128::from(period))
                    .max(1);
                Pattern::Burst {
                    size: *size,
                    spread: spread.as_u64(),
                    period,
                    boundary: u64::try_from(first).unwrap_or(u64::MAX),
                    clients: u64::from(spec.keys.count).max(1),
                    j: 0,
                }
            }
            TrafficKind::OnOff { rate, on, off } => Pattern::OnOff {
                gap: exp_ns(*rate),
                busy: 0,
                on: on.as_u64(),
                off: off.as_u64(),
            },
            TrafficKind::Trace { path, options } => {
                Pattern::Trace(Box::new(TraceReader::open_with(path, options)?))
            }
        })
    }
}

/// Arrivals a source that picks its clients generates at a time: enough that the
/// Zipf table lookups of one batch overlap in memory, few enough to stay in cache.
const AHEAD: usize = 64;

impl Source {
    fn next(&mut self, keys: &mut KeyTable) -> Result<Option<Arrival>, ScenarioError> {
        match self.pattern {
            Pattern::Trace(_) | Pattern::Burst { .. } => self.next_named(keys),
            Pattern::Uniform { .. } | Pattern::Poisson { .. } | Pattern::OnOff { .. } => {
                Ok(self.next_picked(keys))
            }
        }
    }

    /// Appends the source's next arrivals to `chunk`, numbered from `seq` on, until it
    /// holds `until` or the source ends: what [`next`](Self::next) would yield, without
    /// a call per arrival.
    fn append(
        &mut self,
        keys: &mut KeyTable,
        chunk: &mut Vec<(u64, Arrival)>,
        seq: &mut u64,
        until: usize,
    ) -> Result<(), ScenarioError> {
        let picked = matches!(
            self.pattern,
            Pattern::Uniform { .. } | Pattern::Poisson { .. } | Pattern::OnOff { .. }
        );
        while chunk.len() < until {
            if !picked {
                let Some(arrival) = self.next_named(keys)? else {
                    break;
                };
                chunk.push((*seq, arrival));
                *seq += 1;
                continue;
            }
            if self.ahead.is_empty() {
                if self.done {
                    break;
                }
                self.generate_ahead();
            }
            let room = until - chunk.len();
            for (time, index) in self.ahead.drain(..room.min(self.ahead.len())) {
                let key = match self.keep {
                    Keep::All => self.picker.client(index, keys),
                    // Only kept clients were generated ahead: nothing is skipped.
                    _ => match self.keep.client(index) {
                        Some(key) => key,
                        None => continue,
                    },
                };
                let arrival = Arrival {
                    time,
                    key,
                    cost: self.cost,
                };
                chunk.push((*seq, arrival));
                *seq += 1;
            }
        }
        Ok(())
    }

    /// The next arrival the stream keeps from a source whose arrivals name their
    /// client: a trace's rows, or a burst's clients in turn.
    fn next_named(&mut self, keys: &mut KeyTable) -> Result<Option<Arrival>, ScenarioError> {
        while !self.done {
            let (time, key, cost) = match &mut self.pattern {
                Pattern::Trace(reader) => match reader.next_row()? {
                    Some(row) => {
                        let key = match self.keep {
                            Keep::All => Some(keys.intern(&row.key)),
                            _ => self.keep.named(&row.key),
                        };
                        (row.time, key, row.cost.unwrap_or(self.cost))
                    }
                    None => (Nanos::MAX, None, 0),
                },
                Pattern::Burst {
                    size,
                    spread,
                    period,
                    boundary,
                    clients,
                    j,
                } => {
                    let b = u128::from(*boundary) * u128::from(*period);
                    // Half-burst position i of `size` spread evenly over `spread` ns:
                    // offset floor(i·spread / (size − 1)); a lone request sits at 0.
                    let offset = |i: u64| match *size {
                        1 => 0,
                        n => u128::from(i) * u128::from(*spread) / u128::from(n - 1),
                    };
                    let half = *size * *clients;
                    let (i, client) = ((*j % half) / *clients, (*j % half) % *clients);
                    let t = if *j < half {
                        // The last "before" request is 1 ns before the boundary.
                        b - 1 - u128::from(*spread) + offset(i)
                    } else {
                        b + offset(i)
                    };
                    *j += 1;
                    if *j == 2 * half {
                        *j = 0;
                        *boundary += 1;
                    }
                    let client = u32::try_from(client).unwrap_or(u32::MAX);
                    let key = self.key_of(client, keys);
                    (Nanos::saturating_from_u128(t), key, self.cost)
                }
                _ => return Ok(None), // not reached: the other patterns pick their clients
            };
            if time >= self.end || time == Nanos::MAX {
                self.done = true;
            } else if let Some(key) = key {
                return Ok(Some(Arrival { time, key, cost }));
            }
        }
        Ok(None)
    }

    /// The next arrival the stream keeps from a source that draws its clients.
    /// Arrivals are generated [`AHEAD`] at a time, in the order of one at a time (each
    /// instant's draw, then its client's), but a client is interned only when its
    /// arrival is handed out, so key ids are numbered exactly as if nothing were
    /// generated ahead.
    fn next_picked(&mut self, keys: &mut KeyTable) -> Option<Arrival> {
        if self.ahead.is_empty() && !self.done {
            self.generate_ahead();
        }
        let (time, index) = self.ahead.pop_front()?;
        let key = self.key_of(index, keys)?; // only kept clients were generated ahead
        Some(Arrival {
            time,
            key,
            cost: self.cost,
        })
    }

    /// Generates up to [`AHEAD`] arrivals the stream keeps into `ahead`: first every
    /// instant and the randomness of its client (the draws in the order they always
    /// come), then a hint of the table entries each lookup will read, then every
    /// client's lookup, which no longer waits on the random stream or on memory.
    /// A stream of a few keys only checks whether each draw picked one of them.
    fn generate_ahead(&mut self) {
        let mut draws = [(Nanos::ZERO, Draw::Index(0)); AHEAD];
        let mut n = 0;
        while n < AHEAD && self.ahead.len() < AHEAD {
            let time = self.picked_time();
            if time >= self.end || time == Nanos::MAX {
                self.done = true;
                break;
            }
            let draw = self.picker.draw(&mut self.rng);
            match &self.keep {
                Keep::All => {
                    self.picker.prefetch_lookup(draw);
                    draws[n] = (time, draw);
                    n += 1;
                }
                Keep::Clients(kept) => {
                    if let Some(&(pick, _)) = kept.iter().find(|k| k.0.picks(draw)) {
                        self.ahead.push_back((time, pick.index));
                    }
                }
                Keep::Names(_) => {} // not reached: only a trace's rows name their keys
            }
        }
        for &(_, draw) in &draws[..n] {
            self.picker.prefetch_weights(draw);
        }
        for &(time, draw) in &draws[..n] {
            let index = self.picker.index(draw);
            self.picker.prefetch(index);
            self.ahead.push_back((time, index));
        }
    }

    /// The key id of this source's client `index`, if the stream keeps it: interned on
    /// first sight in a whole stream, looked up among the wanted ones in a filtered one.
    fn key_of(&mut self, index: u32, keys: &mut KeyTable) -> Option<u32> {
        match self.keep {
            Keep::All => Some(self.picker.client(index, keys)),
            _ => self.keep.client(index),
        }
    }

    /// The next instant of a source that draws its clients.
    fn picked_time(&mut self) -> Nanos {
        let start = self.start.as_u64();
        match &mut self.pattern {
            Pattern::Uniform { rate, i } => {
                let t = Nanos::new(start) + rate.nth_arrival(*i);
                *i += 1;
                t
            }
            Pattern::Poisson { gap, at } => {
                *at = at.saturating_add(sample_gap(gap, &mut self.rng));
                Nanos::new(start.saturating_add(*at))
            }
            Pattern::OnOff { gap, busy, on, off } => {
                *busy = busy.saturating_add(sample_gap(gap, &mut self.rng));
                // Busy time → real time: every full `on` period adds an `off` gap.
                // `on + off` can exceed u64 and the product u128: widen and saturate
                // (a saturated instant is past any end, so the source just stops).
                let cycles = u128::from(*busy / *on);
                let real = cycles
                    .saturating_mul(u128::from(*on) + u128::from(*off))
                    .saturating_add(u128::from(*busy % *on));
                Nanos::saturating_from_u128(u128::from(start).saturating_add(real))
            }
            Pattern::Trace(_) | Pattern::Burst { .. } => Nanos::MAX, // name their clients
        }
    }
}

#[cfg(test)]
mod tests;
