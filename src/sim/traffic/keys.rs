//! Which client sends each generated request: a source's keys, uniform or Zipf, picked
//! from its random stream and interned once per client.
//!
//! Only key choice lives here; arrival times are the source's business and trace rows
//! name their own keys.

use std::collections::HashMap;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};

use super::KeyTable;
use crate::sim::scenario::{KeySpec, Popularity};

/// Picks a client for each generated request.
pub(super) struct KeyPicker {
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
    /// `guide[b]` = how many weights are ≤ `b · total / buckets`, for `b` in
    /// `0..=buckets`.
    guide: Vec<usize>,
    /// The guide's buckets: about one per client, up to [`Self::MAX_BUCKETS`], so a
    /// search looks at a few neighbouring entries.
    buckets: usize,
    /// `buckets / total`: a point times this is its bucket. Any rounding is caught by
    /// [`rank`](CumulativeTable::rank)'s check of the bracket.
    scale: f64,
}

impl CumulativeTable {
    /// The most guide buckets (512 KB of guide).
    const MAX_BUCKETS: usize = 1 << 16;

    fn new(cumulative: Vec<f64>) -> CumulativeTable {
        let buckets = cumulative.len().next_power_of_two().min(Self::MAX_BUCKETS);
        let mut table = CumulativeTable {
            buckets,
            cumulative,
            guide: Vec::new(),
            scale: 0.0,
        };
        table.scale = buckets as f64 / table.total();
        table.guide = (0..=table.buckets)
            .map(|b| table.search(table.bound(b)))
            .collect();
        table
    }

    fn total(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(1.0)
    }

    /// The `b`-th guide point.
    fn bound(&self, b: usize) -> f64 {
        self.total() * b as f64 / self.buckets as f64
    }

    /// A hint that [`rank(u)`](Self::rank) will be asked soon: its guide entries may
    /// start loading. Changes nothing.
    #[inline]
    fn prefetch(&self, u: f64) {
        if let Some(lo) = self.guide.get(self.bucket(u)) {
            crate::prefetch::prefetch(lo);
        }
    }

    /// A hint that [`rank(u)`](Self::rank) will be asked soon, given after
    /// [`prefetch`](Self::prefetch) had time to bring the guide in: the weights the
    /// search reads first (either end of its bracket) may start loading.
    #[inline]
    fn prefetch_bracket(&self, u: f64) {
        let (lo, hi) = self.bracket(u);
        if let Some(c) = self.cumulative.get(lo.saturating_sub(1)) {
            crate::prefetch::prefetch(c);
        }
        if let Some(c) = self.cumulative.get(hi) {
            crate::prefetch::prefetch(c);
        }
    }

    /// The guide bucket `u` falls in (clamped to the last).
    #[inline]
    fn bucket(&self, u: f64) -> usize {
        // Through `u32`, cheaper than through `usize`: a drawn point is below the total,
        // so the product is below 2^16 + 1 and exact; any larger one saturates and is
        // clamped, which only sends `rank` to its checked fallback.
        let b = (u * self.scale) as u32 as usize;
        b.min(self.buckets - 1)
    }

    /// The guide's bracket for `u`: `(guide[b], guide[b + 1])` of its bucket `b`, which
    /// holds [`rank(u)`](Self::rank) unless rounding put `u` in a neighbouring bucket.
    #[inline]
    fn bracket(&self, u: f64) -> (usize, usize) {
        let b = self.bucket(u); // below `buckets`, and the guide has `buckets + 1` points
        (self.guide[b], self.guide[b + 1])
    }

    /// True when at least `n` weights are ≤ `u`, i.e. [`rank(u)`](Self::rank) ≥ `n`
    /// (the cumulative weights never decrease). `n` ≤ the number of weights.
    #[inline]
    fn at_least(&self, n: usize, u: f64) -> bool {
        n == 0 || self.cumulative[n - 1] <= u
    }

    /// How many weights are ≤ `u`, by binary search of the whole table.
    fn search(&self, u: f64) -> usize {
        self.cumulative.partition_point(|&c| c <= u)
    }

    /// How many weights are ≤ `u` (the drawn rank, from 0). The guide narrows the
    /// search to `[guide[b], guide[b + 1]]`, checked rather than trusted: if rounding
    /// put `u` outside the bracket, the whole table is searched.
    fn rank(&self, u: f64) -> usize {
        let (lo, hi) = self.bracket(u);
        let at_least_lo = self.at_least(lo, u);
        let at_most_hi = hi == self.cumulative.len() || self.cumulative[hi] > u;
        if at_least_lo && at_most_hi {
            lo + self.cumulative[lo..hi].partition_point(|&c| c <= u)
        } else {
            self.search(u)
        }
    }
}

/// The randomness of one client pick, not yet looked up.
#[derive(Debug, Clone, Copy)]
pub(super) enum Draw {
    /// The client's index itself.
    Index(u32),
    /// A point of a Zipf table's cumulative weights, to be looked up.
    Point(f64),
}

/// The draws that pick one client ([`KeyPicker::pick_of`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Pick {
    /// The client (0-based index).
    pub(super) index: u32,
    /// A table's points in `[lo, hi)` pick it (NaN when the picker draws no points).
    lo: f64,
    hi: f64,
}

impl Pick {
    /// True when `draw` picked this client, as [`KeyPicker::index`] would say.
    #[inline]
    pub(super) fn picks(self, draw: Draw) -> bool {
        match draw {
            Draw::Index(i) => i == self.index,
            Draw::Point(u) => self.lo <= u && u < self.hi,
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
    pub(super) fn new(spec: &KeySpec) -> KeyPicker {
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

    /// Draws a client and interns it: [`draw`](Self::draw), [`index`](Self::index)
    /// and [`client`](Self::client) in one.
    #[cfg(test)]
    pub(super) fn pick(&mut self, rng: &mut ChaCha8Rng, keys: &mut KeyTable) -> u32 {
        let draw = self.draw(rng);
        let index = self.index(draw);
        self.client(index, keys)
    }

    /// Takes the randomness that picks one client (none for a one-client source). Which
    /// client it is, [`index`](Self::index) says; in between, a generator can draw for
    /// more arrivals, so the table lookups of many draws overlap in memory.
    #[inline]
    pub(super) fn draw(&self, rng: &mut ChaCha8Rng) -> Draw {
        if self.count == 1 {
            return Draw::Index(0); // no draw: a one-client source does not consume randomness
        }
        match &self.popularity {
            Picking::Uniform => Draw::Index(rng.random_range(0..self.count)),
            Picking::Table(table) => Draw::Point(rng.random::<f64>() * table.total()),
            // Zipf yields 1..=n as a float.
            Picking::Sampler(zipf) => {
                Draw::Index((zipf.sample(rng) as u32).clamp(1, self.count) - 1)
            }
        }
    }

    /// The client (0-based index) `draw` picked. Rank 1 (index 0) is the most popular.
    #[inline]
    pub(super) fn index(&self, draw: Draw) -> u32 {
        match (draw, &self.popularity) {
            (Draw::Index(index), _) => index,
            (Draw::Point(u), Picking::Table(table)) => (table.rank(u) as u32).min(self.count - 1),
            (Draw::Point(_), _) => 0, // not reached: only a table draws a point
        }
    }

    /// What picks client `index` (0-based, below the source's count), so that many
    /// draws can be checked against a few clients without a search: a table's client
    /// takes the points from the weight before it (included) to its own (excluded), the
    /// first every point below and the last every point above, as
    /// [`index`](Self::index) clamps ranks past the last client to it. (Drawn points are
    /// finite and in `[0, total)`; the two differ only at ±∞ and NaN, never drawn.)
    pub(super) fn pick_of(&self, index: u32) -> Pick {
        debug_assert!(index < self.count.max(1), "no such client: {index}");
        let (lo, hi) = match &self.popularity {
            Picking::Table(table) => {
                let weight = |i: usize| table.cumulative.get(i).copied();
                let lo = (index as usize).checked_sub(1).and_then(weight);
                let hi = (index + 1 < self.count)
                    .then_some(index as usize)
                    .and_then(weight);
                (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY))
            }
            // Only a table draws points.
            Picking::Uniform | Picking::Sampler(_) => (f64::NAN, f64::NAN),
        };
        Pick { index, lo, hi }
    }

    /// A hint that [`index(draw)`](Self::index) will be asked soon: the table entries
    /// it reads first may start loading. Changes nothing.
    #[inline]
    pub(super) fn prefetch_lookup(&self, draw: Draw) {
        if let (Draw::Point(u), Picking::Table(table)) = (draw, &self.popularity) {
            table.prefetch(u);
        }
    }

    /// The second hint for [`index(draw)`](Self::index), some time after
    /// [`prefetch_lookup`](Self::prefetch_lookup): the weights it then reads. Changes
    /// nothing.
    #[inline]
    pub(super) fn prefetch_weights(&self, draw: Draw) {
        if let (Draw::Point(u), Picking::Table(table)) = (draw, &self.popularity) {
            table.prefetch_bracket(u);
        }
    }

    /// A hint that client `index` will be interned soon. Changes nothing.
    #[inline]
    pub(super) fn prefetch(&self, index: u32) {
        if let Ids::Dense(ids) = &self.ids
            && let Some(id) = ids.get(index as usize)
        {
            crate::prefetch::prefetch(id);
        }
    }

    /// The id of client `index` (0-based) of this source, interned on first use: for
    /// sources that address every client in turn instead of drawing one.
    #[inline]
    pub(super) fn client(&mut self, index: u32, keys: &mut KeyTable) -> u32 {
        // Every arrival asks; after a client's first, its id is just read.
        if let Ids::Dense(ids) = &self.ids
            && let Some(&id) = ids.get(index as usize)
            && id != UNSEEN
        {
            return id;
        }
        self.intern(index, keys)
    }

    /// [`client`](Self::client) on a client's first arrival (or one beyond the dense
    /// table): its name is formatted and interned.
    #[inline(never)]
    fn intern(&mut self, index: u32, keys: &mut KeyTable) -> u32 {
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
mod tests {
    use rand::SeedableRng;

    use super::*;

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

    /// `pick_of(k).picks(draw)` is true exactly for the client `index(draw)` names: at random
    /// points, at every cumulative weight and one float either side, at 0 and at the
    /// total (where the last client is the clamp's), for a table, uniform picks and a
    /// one-client source.
    #[test]
    fn picks_agrees_with_index_for_every_client() {
        let spec = |count, popularity| KeySpec {
            count,
            popularity,
            prefix: "c".into(),
        };
        let zipf = Popularity::Zipf { exponent: 1.1 };
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for picker in [
            KeyPicker::new(&spec(300, zipf)),
            KeyPicker::new(&spec(300, Popularity::Uniform)),
            KeyPicker::new(&spec(1, zipf)),
        ] {
            let mut draws: Vec<Draw> = (0..3_000).map(|_| picker.draw(&mut rng)).collect();
            if let Picking::Table(table) = &picker.popularity {
                draws.extend([0.0, table.total(), table.total().next_up()].map(Draw::Point));
                for &c in &table.cumulative {
                    draws.extend([c, c.next_down(), c.next_up()].map(Draw::Point));
                }
            }
            for draw in draws {
                let index = picker.index(draw);
                for k in 0..picker.count {
                    let picks = picker.pick_of(k).picks(draw);
                    assert_eq!(picks, k == index, "{draw:?}, client {k}");
                }
            }
        }
    }

    /// A guide that brackets the wrong entries (as rounding could make it) is noticed:
    /// with every guide point moved one, two or many buckets either way, or scrambled,
    /// the guided search still answers exactly as the whole table's.
    #[test]
    fn the_guided_search_is_exact_even_when_the_guide_is_wrong() {
        let mut total = 0.0;
        let weights: Vec<f64> = (1..=1_000u32)
            .map(|i| {
                total += f64::from(i).powf(-0.8);
                total
            })
            .collect();
        let exact = CumulativeTable::new(weights.clone());
        let buckets = exact.buckets;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut guides: Vec<Vec<usize>> = [-40isize, -2, -1, 1, 2, 40]
            .into_iter()
            .map(|shift| {
                (0..=buckets)
                    .map(|b| exact.guide[b.saturating_add_signed(shift).min(buckets)])
                    .collect()
            })
            .collect();
        guides.push(
            (0..=buckets)
                .map(|_| rng.random_range(0..=weights.len()))
                .collect(),
        );
        let mut points = vec![0.0, total];
        for &c in &weights {
            points.extend([c, c.next_down(), c.next_up()]);
        }
        points.extend((0..5_000).map(|_| rng.random::<f64>() * total));
        for guide in guides {
            let table = CumulativeTable {
                cumulative: weights.clone(),
                guide,
                buckets,
                scale: exact.scale,
            };
            for &u in &points {
                assert_eq!(
                    table.rank(u),
                    exact.search(u),
                    "u {u}, guide {:?}",
                    table.guide
                );
            }
        }
    }

    /// Draws `draws` clients from a Zipf(`n`, `s`) source and checks that each of the
    /// most popular ranks gets its probability `(1/i^s) / Σ 1/j^s` of them, within 5
    /// standard deviations. Rank 1 is client 0.
    fn draws_each_rank_with_its_zipf_probability(n: u32, s: f64, draws: u32, table: bool) {
        let spec = KeySpec {
            count: n,
            popularity: Popularity::Zipf { exponent: s },
            prefix: "c".into(),
        };
        let mut picker = KeyPicker::new(&spec);
        assert_eq!(matches!(picker.popularity, Picking::Table(_)), table);
        let mut keys = KeyTable::default();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for _ in 0..draws {
            let id = picker.pick(&mut rng, &mut keys);
            let index: u32 = keys.name(id).trim_start_matches("c-").parse().unwrap();
            assert!(index < n, "client {index} of {n}");
            *counts.entry(index).or_default() += 1;
        }
        let norm: f64 = (1..=n).map(|i| f64::from(i).powf(-s)).sum();
        for rank in [1u32, 2, 3, 5, 10, 50, 100] {
            let p = f64::from(rank).powf(-s) / norm;
            let expected = p * f64::from(draws);
            let sigma = (f64::from(draws) * p * (1.0 - p)).sqrt();
            let got = f64::from(counts.get(&(rank - 1)).copied().unwrap_or(0));
            assert!(
                (got - expected).abs() <= 5.0 * sigma,
                "rank {rank}: {got} vs {expected:.0} ± {sigma:.0}"
            );
        }
    }

    /// Each rank's share of 400,000 draws is within 5 standard deviations of its Zipf
    /// probability, for the ranks that carry most of the mass.
    #[test]
    fn the_zipf_table_draws_each_rank_with_its_zipf_probability() {
        draws_each_rank_with_its_zipf_probability(1_000, 1.1, 400_000, true);
    }

    /// Beyond [`ZIPF_TABLE_MAX`] clients the draws come from a Zipf sampler instead of a
    /// table, with the same ranks: client 0 the most popular, then 1, 2, ….
    #[test]
    fn a_zipf_source_too_large_for_a_table_draws_each_rank_with_its_zipf_probability() {
        draws_each_rank_with_its_zipf_probability(ZIPF_TABLE_MAX + 1, 1.1, 100_000, false);
    }
}
