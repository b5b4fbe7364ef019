//! Arrival processes and their lazy, time-ordered merge.
//!
//! Each `[[traffic]]` source yields `(time, key, cost)` arrivals in its own time order,
//! seeded from the scenario seed and its position, so a stream is reproducible. The
//! merge holds one pending arrival per source (never the whole stream). This module
//! knows nothing of algorithms or decisions.
//!
//! Floats appear in exactly two places: Poisson gaps (an exponential sample in seconds,
//! rounded to the nearest nanosecond) and Zipf key picks. Everything else is integer.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Zipf};

use super::scenario::{
    KeySpec, Popularity, Rate, Scenario, ScenarioError, TrafficKind, burst_period,
};
use super::trace::TraceReader;
use crate::time::Nanos;

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
#[derive(Debug, Default)]
pub struct KeyTable {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl KeyTable {
    /// The id of `name`, assigning the next one on first sight.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        // Validation caps every source below u32::MAX keys, but traces could add
        // more; saturate rather than wrap (ids are only labels).
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    /// The name of key `id` (empty for an unknown id).
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
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
        let mut stream = ArrivalStream {
            sources: Vec::new(),
            heap: BinaryHeap::new(),
            pending: Vec::new(),
            next_seq: 0,
            keys: KeyTable::default(),
        };
        for (index, spec) in scenario.traffic.iter().enumerate() {
            // One independent ChaCha stream per source: adding a source never changes
            // the arrivals of the others.
            let mut rng = ChaCha8Rng::seed_from_u64(scenario.seed);
            rng.set_stream(index as u64 + 1);
            let picker = KeyPicker::new(&spec.keys);
            let pattern = match &spec.kind {
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
                    let period = burst_period(*period, &scenario.rule).as_u64();
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
                        j: 0,
                    }
                }
                TrafficKind::OnOff { rate, on, off } => Pattern::OnOff {
                    gap: exp_ns(*rate),
                    busy: 0,
                    on: on.as_u64(),
                    off: off.as_u64(),
                },
                TrafficKind::Trace { path } => Pattern::Trace(TraceReader::open(path)?),
            };
            stream.sources.push(Source {
                pattern,
                picker,
                rng,
                cost: spec.cost,
                start: spec.start,
                end: spec.end,
                done: false,
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

    /// The key names seen so far.
    pub fn keys(&self) -> &KeyTable {
        &self.keys
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
fn sample_gap(gap: &Exp<f64>, rng: &mut ChaCha8Rng) -> u64 {
    (gap.sample(rng) * 1e9).round() as u64
}

struct Source {
    pattern: Pattern,
    picker: KeyPicker,
    rng: ChaCha8Rng,
    cost: u64,
    start: Nanos,
    end: Nanos,
    done: bool,
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
        /// 0..size are before the boundary, size..2·size after.
        j: u64,
    },
    OnOff {
        gap: Exp<f64>,
        /// Busy time elapsed, i.e. time with the idle periods cut out.
        busy: u64,
        on: u64,
        off: u64,
    },
    Trace(TraceReader),
}

impl Source {
    fn next(&mut self, keys: &mut KeyTable) -> Result<Option<Arrival>, ScenarioError> {
        if self.done {
            return Ok(None);
        }
        let start = self.start.as_u64();
        let (time, key, cost) = match &mut self.pattern {
            Pattern::Trace(reader) => match reader.next_row()? {
                Some(row) => {
                    let key = keys.intern(&row.key);
                    (row.time, Some(key), row.cost.unwrap_or(self.cost))
                }
                None => (Nanos::MAX, None, 0),
            },
            Pattern::Uniform { rate, i } => {
                let t = Nanos::new(start) + rate.nth_arrival(*i);
                *i += 1;
                (t, None, self.cost)
            }
            Pattern::Poisson { gap, at } => {
                *at = at.saturating_add(sample_gap(gap, &mut self.rng));
                (Nanos::new(start.saturating_add(*at)), None, self.cost)
            }
            Pattern::Burst {
                size,
                spread,
                period,
                boundary,
                j,
            } => {
                let b = u128::from(*boundary) * u128::from(*period);
                // Half-burst i of `size` requests spread evenly over `spread` ns:
                // offset floor(i·spread / (size − 1)); a lone request sits at 0.
                let offset = |i: u64| match *size {
                    1 => 0,
                    n => u128::from(i) * u128::from(*spread) / u128::from(n - 1),
                };
                let t = if *j < *size {
                    // The last "before" request is 1 ns before the boundary.
                    b - 1 - u128::from(*spread) + offset(*j)
                } else {
                    b + offset(*j - *size)
                };
                *j += 1;
                if *j == 2 * *size {
                    *j = 0;
                    *boundary += 1;
                }
                (Nanos::saturating_from_u128(t), None, self.cost)
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
                let t = Nanos::saturating_from_u128(u128::from(start).saturating_add(real));
                (t, None, self.cost)
            }
        };
        if time >= self.end || time == Nanos::MAX {
            self.done = true;
            return Ok(None);
        }
        let key = match key {
            Some(k) => k,
            None => self.picker.pick(&mut self.rng, keys),
        };
        Ok(Some(Arrival { time, key, cost }))
    }
}

/// Picks a client for each generated request.
struct KeyPicker {
    count: u32,
    popularity: Picking,
    prefix: String,
    /// Client index → interned id, so names are formatted once per client.
    ids: Ids,
}

/// How a client index is drawn.
enum Picking {
    /// Every client equally likely.
    Uniform,
    /// Zipf over up to [`ZIPF_TABLE_MAX`] clients: a search of cumulative weights
    /// instead of rejection sampling's several `powf` calls.
    Table(CumulativeTable),
    /// Zipf over more clients than a table should hold.
    Sampler(Zipf<f64>),
}

/// Cumulative weights with a guide: [`rank`](CumulativeTable::rank) answers exactly
/// what a binary search of the whole table would, but searches only the few entries
/// between two guide points, which stay in cache where the whole table (8 MB at 2^20
/// clients) would not.
#[derive(Debug)]
struct CumulativeTable {
    cumulative: Vec<f64>,
    /// `guide[b]` = how many weights are ≤ `b · total / GUIDE`, for `b` in `0..=GUIDE`.
    guide: Vec<usize>,
}

impl CumulativeTable {
    const GUIDE: usize = 4096;

    fn new(cumulative: Vec<f64>) -> CumulativeTable {
        let mut table = CumulativeTable {
            cumulative,
            guide: Vec::new(),
        };
        table.guide = (0..=Self::GUIDE)
            .map(|b| table.search(table.bound(b)))
            .collect();
        table
    }

    fn total(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(1.0)
    }

    /// The `b`-th guide point.
    fn bound(&self, b: usize) -> f64 {
        self.total() * b as f64 / Self::GUIDE as f64
    }

    /// How many weights are ≤ `u`, by binary search of the whole table.
    fn search(&self, u: f64) -> usize {
        self.cumulative.partition_point(|&c| c <= u)
    }

    /// How many weights are ≤ `u` (the drawn rank, from 0). The guide narrows the
    /// search to `[guide[b], guide[b + 1]]`, checked rather than trusted: if rounding
    /// put `u` outside the bracket, the whole table is searched.
    fn rank(&self, u: f64) -> usize {
        let b = ((u / self.total()) * Self::GUIDE as f64) as usize;
        let b = b.min(Self::GUIDE - 1);
        let (lo, hi) = (self.guide[b], self.guide[b + 1]);
        let at_least_lo = lo == 0 || self.cumulative[lo - 1] <= u;
        let at_most_hi = hi == self.cumulative.len() || self.cumulative[hi] > u;
        if at_least_lo && at_most_hi {
            lo + self.cumulative[lo..hi].partition_point(|&c| c <= u)
        } else {
            self.search(u)
        }
    }
}

/// The most clients a Zipf table holds (8 bytes each).
const ZIPF_TABLE_MAX: u32 = 1 << 20;

/// Client index → interned key id: dense for up to [`ZIPF_TABLE_MAX`] clients, a map
/// beyond (a source may name billions of clients and use few).
enum Ids {
    Dense(Vec<u32>),
    Sparse(HashMap<u32, u32>),
}

/// Marks a client not seen yet in [`Ids::Dense`].
const UNSEEN: u32 = u32::MAX;

impl KeyPicker {
    fn new(spec: &KeySpec) -> KeyPicker {
        let small = spec.count <= ZIPF_TABLE_MAX;
        let popularity = match spec.popularity {
            Popularity::Uniform => Picking::Uniform,
            Popularity::Zipf { exponent } if small => {
                let mut total = 0.0;
                let cumulative = (1..=spec.count)
                    .map(|i| {
                        total += f64::from(i).powf(-exponent);
                        total
                    })
                    .collect();
                Picking::Table(CumulativeTable::new(cumulative))
            }
            // Validation guarantees n ≥ 1 and s ≥ 0, which is what Zipf::new needs.
            Popularity::Zipf { exponent } => match Zipf::new(f64::from(spec.count), exponent) {
                Ok(z) => Picking::Sampler(z),
                Err(_) => Picking::Uniform,
            },
        };
        KeyPicker {
            count: spec.count,
            popularity,
            prefix: spec.prefix.clone(),
            ids: if small {
                Ids::Dense(Vec::new())
            } else {
                Ids::Sparse(HashMap::new())
            },
        }
    }

    fn pick(&mut self, rng: &mut ChaCha8Rng, keys: &mut KeyTable) -> u32 {
        let index = if self.count == 1 {
            0 // no draw: a one-client source does not consume randomness
        } else {
            match &self.popularity {
                Picking::Uniform => rng.random_range(0..self.count),
                Picking::Table(table) => {
                    // Rank 1 (index 0) is the most popular client.
                    let u = rng.random::<f64>() * table.total();
                    (table.rank(u) as u32).min(self.count - 1)
                }
                // Zipf yields 1..=n as a float.
                Picking::Sampler(zipf) => (zipf.sample(rng) as u32).clamp(1, self.count) - 1,
            }
        };
        let prefix = &self.prefix;
        let name = || format!("{prefix}-{index}");
        match &mut self.ids {
            Ids::Dense(ids) => {
                let i = index as usize;
                if i >= ids.len() {
                    ids.resize(i + 1, UNSEEN);
                }
                if ids[i] == UNSEEN {
                    ids[i] = keys.intern(&name());
                }
                ids[i]
            }
            Ids::Sparse(ids) => *ids.entry(index).or_insert_with(|| keys.intern(&name())),
        }
    }
}

#[cfg(test)]
mod picker_tests {
    use super::*;
    use rand::SeedableRng;

    /// The guided search answers exactly as a binary search of the whole table, at
    /// random points, at every weight, one float either side, and past both ends.
    #[test]
    fn the_guided_search_equals_a_full_binary_search_everywhere() {
        for (n, s) in [
            (1u32, 1.1),
            (2, 0.0),
            (7, 1.1),
            (1_000, 0.5),
            (100_000, 1.1),
        ] {
            let mut total = 0.0;
            let weights: Vec<f64> = (1..=n)
                .map(|i| {
                    total += f64::from(i).powf(-s);
                    total
                })
                .collect();
            let table = CumulativeTable::new(weights.clone());
            let mut points = vec![-1.0, 0.0, total, total * 2.0, f64::MIN_POSITIVE];
            for &c in weights.iter().step_by((n as usize / 5_000).max(1)) {
                points.extend([c, c.next_down(), c.next_up()]);
            }
            let mut rng = ChaCha8Rng::seed_from_u64(u64::from(n));
            points.extend((0..20_000).map(|_| rng.random::<f64>() * total));
            for u in points {
                assert_eq!(table.rank(u), table.search(u), "n {n}, s {s}, u {u}");
            }
        }
    }

    /// Each rank's share of 400,000 draws is within 5 standard deviations of its Zipf
    /// probability `(1/i^s) / Σ 1/j^s`, for the ranks that carry most of the mass.
    #[test]
    fn the_zipf_table_draws_each_rank_with_its_zipf_probability() {
        let (n, s, draws) = (1_000u32, 1.1, 400_000u32);
        let spec = KeySpec {
            count: n,
            popularity: Popularity::Zipf { exponent: s },
            prefix: "c".into(),
        };
        let mut picker = KeyPicker::new(&spec);
        assert!(matches!(picker.popularity, Picking::Table(_)));
        let mut keys = KeyTable::default();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..draws {
            let id = picker.pick(&mut rng, &mut keys);
            let index: usize = keys.name(id).trim_start_matches("c-").parse().unwrap();
            counts[index] += 1;
        }
        let norm: f64 = (1..=n).map(|i| f64::from(i).powf(-s)).sum();
        for rank in [1u32, 2, 3, 5, 10, 50, 100] {
            let p = f64::from(rank).powf(-s) / norm;
            let expected = p * f64::from(draws);
            let sigma = (f64::from(draws) * p * (1.0 - p)).sqrt();
            let got = f64::from(counts[rank as usize - 1]);
            assert!(
                (got - expected).abs() <= 5.0 * sigma,
                "rank {rank}: {got} vs {expected:.0} ± {sigma:.0}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn scenario(traffic: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nseed = 7\nduration = \"40s\"\n[limit]\nmax_requests = 5\n\
             window = \"10s\"\n{traffic}"
        );
        Scenario::parse(&text, Path::new("t.toml")).unwrap()
    }

    fn drain(s: &Scenario) -> Vec<(u64, Arrival)> {
        let mut stream = ArrivalStream::new(s).unwrap();
        let mut out = Vec::new();
        while let Some(a) = stream.next_arrival().unwrap() {
            out.push(a);
        }
        out
    }

    #[test]
    fn boundary_bursts_straddle_every_boundary_at_one_instant_each_side() {
        let s = scenario("[[traffic]]\nkind = \"boundary_burst\"\nsize = 3\n");
        let times: Vec<u64> = drain(&s).iter().map(|(_, a)| a.time.as_u64()).collect();
        let w = 10_000_000_000;
        let mut expected = Vec::new();
        for k in 1..=3u64 {
            expected.extend([k * w - 1; 3]);
            expected.extend([k * w; 3]);
        }
        expected.extend([4 * w - 1; 3]); // 40 s is the end: only the "before" half
        assert_eq!(times, expected);
    }

    #[test]
    fn spread_bursts_cover_the_spread_evenly_and_stay_in_order() {
        let s = scenario("[[traffic]]\nkind = \"boundary_burst\"\nsize = 3\nspread = \"2ns\"\n");
        let times: Vec<u64> = drain(&s)
            .iter()
            .take(6)
            .map(|(_, a)| a.time.as_u64())
            .collect();
        let b = 10_000_000_000;
        assert_eq!(times, [b - 3, b - 2, b - 1, b, b + 1, b + 2]);
    }

    #[test]
    fn ties_keep_declaration_order_and_seq_counts_from_zero() {
        let s = scenario(
            "[[traffic]]\nkind = \"uniform\"\nrate = 1\nkey_prefix = \"a\"\n\
             [[traffic]]\nkind = \"uniform\"\nrate = 1\nkey_prefix = \"b\"\n",
        );
        let mut stream = ArrivalStream::new(&s).unwrap();
        let (s0, a0) = stream.next_arrival().unwrap().unwrap();
        let (s1, a1) = stream.next_arrival().unwrap().unwrap();
        assert_eq!((s0, s1), (0, 1));
        assert_eq!(a0.time, a1.time);
        assert_eq!(stream.keys().name(a0.key), "a-0");
        assert_eq!(stream.keys().name(a1.key), "b-0");
    }

    #[test]
    fn on_off_sources_are_silent_while_off() {
        let s = scenario("[[traffic]]\nkind = \"on_off\"\nrate = 50\non = \"1s\"\noff = \"3s\"\n");
        let arrivals = drain(&s);
        assert!(arrivals.len() > 100, "{} arrivals", arrivals.len());
        for (_, a) in arrivals {
            let phase = a.time.as_u64() % 4_000_000_000;
            assert!(
                phase < 1_000_000_000,
                "arrival at {:?} is in an off period",
                a.time
            );
        }
    }
}
