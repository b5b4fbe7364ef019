//! Algorithm names → constructors (the seed's factory), open for extension.
//!
//! The registry only builds algorithms; it holds no state and reads no clock.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::algorithm::{
    BoxedAlgorithm, FixedWindow, Gcra, LeakyBucket, SlidingWindowCounter, SlidingWindowLog,
    TokenBucket,
};
use crate::rule::Rule;

type Constructor = Arc<dyn Fn(Rule) -> BoxedAlgorithm + Send + Sync>;
type Bound = Arc<dyn Fn(&Rule) -> u64 + Send + Sync>;

/// The registry: every algorithm a program can name, in display order, with what is
/// known about each. It is the one source of algorithm names, descriptions, worst-case
/// bounds and order for every layer: scenarios resolve names in it, the simulator
/// builds from it, `ratesim list`, `worst-case` and `calibrate` read its bounds, and the
/// charts colour algorithms by their place in it. [`Registry::default`] holds the six
/// built-ins; [`Registry::register`] and [`Registry::add`] add more (the seed's
/// `RateLimiterFactory.register`).
///
/// ```
/// use ratesim::{Algorithm, Nanos, Registry, Rule};
/// let registry = Registry::default();
/// let rule = Rule::new(5, Nanos::from_secs(10))?;
/// let algo = registry.create("sliding_window_log", rule)?;
/// assert_eq!(algo.name(), "sliding_window_log");
/// assert_eq!(registry.entry("fixed_window")?.worst_case(&rule), Some(10));
/// let err = registry.create("token_buckett", rule).unwrap_err();
/// assert!(err.to_string().contains("token_bucket"), "the error lists the known names");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Entry>,
}

/// The group name that selects every preset (`ratesim::presets::GROUP`), as `all`
/// selects the built-ins. The presets and [`Registry::standard`] live in
/// [`crate::presets`], above this module.
pub const PRESETS_GROUP: &str = "presets";

/// One registered algorithm: its name, how to build it, and what is known about it.
///
/// ```
/// use ratesim::{BoxedAlgorithm, FixedWindow, Nanos, Registry, Rule};
/// use ratesim::registry::Entry;
/// let mut registry = Registry::default();
/// registry.add(
///     Entry::new("twice_fixed", "A fixed window of twice the limit.", |r: Rule| {
///         let doubled = Rule::new(2 * r.max_requests(), r.window()).expect("valid");
///         BoxedAlgorithm::new(FixedWindow::new(doubled))
///     })
///     .with_worst_case("4N", |r: &Rule| 4 * r.max_requests()),
/// );
/// let rule = Rule::new(5, Nanos::from_secs(10))?;
/// let entry = registry.entry("twice_fixed")?;
/// assert_eq!(entry.worst_case_formula(), Some("4N"));
/// assert_eq!(entry.worst_case(&rule), Some(20));
/// let last = registry.names().count() - 1;
/// assert_eq!(registry.position("twice_fixed"), Some(last), "after the built-ins and presets");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Entry {
    name: String,
    description: String,
    build: Constructor,
    worst_case: Option<(String, Bound)>,
    uses_burst: bool,
    builtin: Option<Builtin>,
    /// A preset (a model of a limiter people run): named on its own or by the group
    /// `presets`, never by `all`, which keeps meaning the textbook algorithms.
    preset: bool,
    /// Whether a refused request still changes the key's state (see
    /// [`Entry::counting_denials`]).
    counts_denials: bool,
}

/// The six algorithms this crate ships, for callers that want static dispatch over
/// them (the simulator runs its engine monomorphised for each). A name registered
/// over a built-in replaces it and is no longer reported as built in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Builtin {
    /// [`TokenBucket`].
    TokenBucket,
    /// [`LeakyBucket`].
    LeakyBucket,
    /// [`FixedWindow`].
    FixedWindow,
    /// [`SlidingWindowLog`]: the exact reference the simulator measures against.
    SlidingWindowLog,
    /// [`SlidingWindowCounter`].
    SlidingWindowCounter,
    /// [`Gcra`].
    Gcra,
}

impl Entry {
    /// An algorithm called `name`, described in one line, built by `build`. Nothing is
    /// known about its worst case until [`Entry::with_worst_case`] says so.
    pub fn new(
        name: &str,
        description: &str,
        build: impl Fn(Rule) -> BoxedAlgorithm + Send + Sync + 'static,
    ) -> Entry {
        Entry {
            name: name.to_string(),
            description: description.to_string(),
            build: Arc::new(build),
            worst_case: None,
            uses_burst: false,
            builtin: None,
            preset: false,
            counts_denials: false,
        }
    }

    /// The most the algorithm can admit (by cost) in any window of the rule's length:
    /// `formula` for people (`"2N"`, `"B + N - 1"`), `bound` exact for a rule. The
    /// worst-case search checks it, and `calibrate` derives strict settings from it,
    /// so it must be exact or at least an upper bound.
    pub fn with_worst_case(
        mut self,
        formula: &str,
        bound: impl Fn(&Rule) -> u64 + Send + Sync + 'static,
    ) -> Entry {
        self.worst_case = Some((formula.to_string(), Arc::new(bound)));
        self
    }

    /// Says that the algorithm's capacity is the rule's `burst` (as for the buckets and
    /// GCRA), so a calibration may choose a burst apart from `max_requests`.
    pub fn with_burst(mut self) -> Entry {
        self.uses_burst = true;
        self
    }

    /// Marks the entry as a preset (a model of a real limiter): the group name
    /// `presets` selects it, and `all` does not.
    pub fn as_preset(mut self) -> Entry {
        self.preset = true;
        self
    }

    /// Whether the entry is a preset (see [`Entry::as_preset`]).
    pub fn is_preset(&self) -> bool {
        self.preset
    }

    /// Marks an algorithm whose refusals still change the key's state, as some real
    /// limiters count refused requests (HAProxy's stick table, Envoy's ratelimit
    /// service): the simulator then re-probes a key's earliest passing instant after
    /// each of its denials instead of remembering it.
    pub fn counting_denials(mut self) -> Entry {
        self.counts_denials = true;
        self
    }

    /// Whether refusals change the key's state (see [`Entry::counting_denials`]).
    pub fn counts_denials(&self) -> bool {
        self.counts_denials
    }

    /// The registry name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Builds the algorithm for `rule`.
    pub fn create(&self, rule: Rule) -> BoxedAlgorithm {
        (self.build)(rule)
    }

    /// The worst case in any window as a formula, when known.
    pub fn worst_case_formula(&self) -> Option<&str> {
        self.worst_case
            .as_ref()
            .map(|(formula, _)| formula.as_str())
    }

    /// The worst case in any window of the rule's length, when known.
    pub fn worst_case(&self, rule: &Rule) -> Option<u64> {
        self.worst_case.as_ref().map(|(_, bound)| bound(rule))
    }

    /// Whether the algorithm's capacity is the rule's `burst`.
    pub fn uses_burst(&self) -> bool {
        self.uses_burst
    }

    /// Which built-in this is, if it is one.
    pub fn builtin(&self) -> Option<Builtin> {
        self.builtin
    }

    fn builtin_entry(
        builtin: Builtin,
        name: &str,
        description: &str,
        build: fn(Rule) -> BoxedAlgorithm,
        (formula, bound): (&str, fn(&Rule) -> u64),
    ) -> Entry {
        let uses_burst = matches!(
            builtin,
            Builtin::TokenBucket | Builtin::LeakyBucket | Builtin::Gcra
        );
        let mut entry = Entry::new(name, description, build).with_worst_case(formula, bound);
        entry.uses_burst = uses_burst;
        entry.builtin = Some(builtin);
        entry
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("worst_case", &self.worst_case_formula())
            .field("uses_burst", &self.uses_burst)
            .field("builtin", &self.builtin)
            .finish_non_exhaustive()
    }
}

/// An algorithm name the registry does not know, with the closest known name when
/// one is close (`gcr` → `gcra`, `sliding_log` → `sliding_window_log`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAlgorithm {
    /// The name asked for (empty for an empty entry).
    pub name: String,
    /// Every registered name, in registration order.
    pub known: Vec<String>,
    /// The registered name the caller probably meant.
    pub suggestion: Option<String>,
}

impl fmt::Display for UnknownAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            f.write_str("empty algorithm name")?;
        } else {
            write!(f, "unknown algorithm `{}`", self.name)?;
        }
        if let Some(s) = &self.suggestion {
            write!(f, " (did you mean `{s}`?)")?;
        }
        write!(
            f,
            "; expected one of: {}, or `all` or `{}`",
            self.known.join(", "),
            PRESETS_GROUP
        )
    }
}

impl std::error::Error for UnknownAlgorithm {}

impl Default for Registry {
    /// The six built-ins, in the order tables and charts show them.
    fn default() -> Registry {
        Registry::builtin().clone()
    }
}

impl Registry {
    /// The six built-ins, shared: what [`Registry::default`] copies. Code that only
    /// reads names or bounds of the built-ins can borrow this instead of building one.
    ///
    /// ## Their worst cases
    /// Time is whole nanoseconds, so `(t − W, t]` holds exactly `W` instants. For windows
    /// of at least `2N` ns the bounds are the familiar `N` (sliding log), `2N` (fixed
    /// window), `2N − 1` (sliding window counter) and `B + N − 1` (buckets and GCRA), all
    /// exact. A shorter window holds too few instants to straddle a boundary or to refill
    /// a whole `N − 1`, and the bounds are smaller (exact for the windows; for the buckets
    /// an upper bound, which ignores refill lost while the bucket is full between two
    /// instants); each algorithm's `worst_case` function gives the formula. The
    /// worst-case search reaches each exact one exactly and never exceeds any
    /// (`tests/worst_case.rs`, windows from 1 ns to 60 s).
    pub fn builtin() -> &'static Registry {
        static BUILTIN: OnceLock<Registry> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            let entries = vec![
                Entry::builtin_entry(
                    Builtin::TokenBucket,
                    "token_bucket",
                    "Bucket of `burst` tokens refilled at max/window: bursts up to capacity, then a steady rate.",
                    |r| BoxedAlgorithm::new(TokenBucket::new(r)),
                    ("B + N - 1", TokenBucket::worst_case),
                ),
                Entry::builtin_entry(
                    Builtin::LeakyBucket,
                    "leaky_bucket",
                    "Leaky bucket as a meter (policer): the token bucket's mirror image, identical decisions.",
                    |r| BoxedAlgorithm::new(LeakyBucket::new(r)),
                    ("B + N - 1", LeakyBucket::worst_case),
                ),
                Entry::builtin_entry(
                    Builtin::FixedWindow,
                    "fixed_window",
                    "One counter per aligned window: cheapest, but up to 2 x max passes across a boundary.",
                    |r| BoxedAlgorithm::new(FixedWindow::new(r)),
                    ("2N", FixedWindow::worst_case),
                ),
                Entry::builtin_entry(
                    Builtin::SlidingWindowLog,
                    "sliding_window_log",
                    "Exact: logs each admitted request and counts those in (now - W, now]. Memory O(max).",
                    |r| BoxedAlgorithm::new(SlidingWindowLog::new(r)),
                    ("N", SlidingWindowLog::worst_case),
                ),
                Entry::builtin_entry(
                    Builtin::SlidingWindowCounter,
                    "sliding_window_counter",
                    "Two counters, previous window weighted by overlap: O(1), approximate (up to 2 x max - 1).",
                    |r| BoxedAlgorithm::new(SlidingWindowCounter::new(r)),
                    ("2N - 1", SlidingWindowCounter::worst_case),
                ),
                Entry::builtin_entry(
                    Builtin::Gcra,
                    "gcra",
                    "Generic cell rate algorithm: one timestamp per key, same decisions as the leaky bucket.",
                    |r| BoxedAlgorithm::new(Gcra::new(r)),
                    ("B + N - 1", Gcra::worst_case),
                ),
            ];
            Registry { entries }
        })
    }

    /// Adds (or replaces, in place) the algorithm called `name`, with nothing known
    /// about its worst case; [`Registry::add`] takes an [`Entry`] that says more.
    pub fn register(
        &mut self,
        name: &str,
        description: &str,
        build: impl Fn(Rule) -> BoxedAlgorithm + Send + Sync + 'static,
    ) {
        self.add(Entry::new(name, description, build));
    }

    /// Adds `entry` at the end of the display order, or replaces the entry of the same
    /// name where it stands.
    pub fn add(&mut self, entry: Entry) {
        match self.entries.iter_mut().find(|e| e.name == entry.name) {
            Some(existing) => *existing = entry,
            None => self.entries.push(entry),
        }
    }

    /// Builds the algorithm called `name` for `rule`.
    pub fn create(&self, name: &str, rule: Rule) -> Result<BoxedAlgorithm, UnknownAlgorithm> {
        Ok(self.entry(name)?.create(rule))
    }

    /// Registered names, in display order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// Registered entries, in display order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// The one-line description of `name`.
    pub fn description(&self, name: &str) -> Result<&str, UnknownAlgorithm> {
        Ok(&self.entry(name)?.description)
    }

    /// The place of `name` in the display order (tables, charts' colours).
    pub fn position(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.name == name)
    }

    /// Expands a list of names where `all` means every registered one but the presets
    /// and `presets` every preset, keeping order and dropping repeats; an unknown name
    /// is an error that lists the known ones.
    pub fn resolve<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<String>, UnknownAlgorithm> {
        let mut out: Vec<String> = Vec::new();
        for name in names {
            let name = name.as_ref().trim();
            let expanded: Vec<&str> = if name == "all" || name == PRESETS_GROUP {
                let presets = name == PRESETS_GROUP;
                let group = self.entries.iter().filter(|e| e.preset == presets);
                group.map(|e| e.name.as_str()).collect()
            } else {
                vec![self.entry(name)?.name.as_str()]
            };
            for n in expanded {
                if !out.iter().any(|o| o == n) {
                    out.push(n.to_string());
                }
            }
        }
        Ok(out)
    }

    /// The entry called `name`; an unknown name is an error that lists the known ones
    /// and suggests the closest.
    pub fn entry(&self, name: &str) -> Result<&Entry, UnknownAlgorithm> {
        self.entries.iter().find(|e| e.name == name).ok_or_else(|| {
            let known: Vec<String> = self.names().map(str::to_string).collect();
            UnknownAlgorithm {
                name: name.to_string(),
                suggestion: closest_name(name, &known),
                known,
            }
        })
    }
}

/// The name in `known` that `name` most probably meant: the only one within a small
/// edit distance (ignoring case and `-` for `_`), or else the only one containing every
/// `_`-separated part of `name` (`sliding_log`, `leaky`). `None` when nothing is close
/// or several are equally close.
fn closest_name(name: &str, known: &[String]) -> Option<String> {
    let norm = |s: &str| s.trim().to_ascii_lowercase().replace('-', "_");
    let name = norm(name);
    if name.len() < 2 {
        return None;
    }
    let unique = |matches: Vec<&String>| match matches.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    };
    let distances: Vec<(usize, &String)> = known
        .iter()
        .map(|k| (edit_distance(&name, &norm(k)), k))
        .collect();
    let best = distances.iter().map(|(d, _)| *d).min()?;
    if best <= (name.chars().count() / 4).max(2) {
        let at_best = distances.iter().filter(|(d, _)| *d == best);
        return unique(at_best.map(|(_, k)| *k).collect());
    }
    let parts: Vec<&str> = name.split('_').filter(|p| p.len() >= 3).collect();
    if parts.is_empty() {
        return None;
    }
    unique(
        known
            .iter()
            .filter(|k| parts.iter().all(|p| norm(k).contains(p)))
            .collect(),
    )
}

/// Levenshtein distance in characters: insertions, deletions and substitutions.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_algorithm_name_is_suggested_and_a_far_or_ambiguous_one_is_not() {
        // The six built-ins: with the presets `fixed` is ambiguous (see the last test).
        let known: Vec<String> = Registry::default().resolve(&["all"]).unwrap();
        let cases = [
            ("gcr", Some("gcra")),
            ("GCRA", Some("gcra")),
            ("token-bucket", Some("token_bucket")),
            ("tokenbucket", Some("token_bucket")),
            ("sliding_windw_log", Some("sliding_window_log")),
            ("sliding_log", Some("sliding_window_log")),
            ("leaky", Some("leaky_bucket")),
            ("fixed", Some("fixed_window")),
            ("nope", None),
            ("bucket", None),
            ("sliding", None),
            ("sliding_window", None),
            ("gcar", Some("gcra")),
            ("window", None),
            ("", None),
            ("x", None),
        ];
        for (name, expected) in cases {
            assert_eq!(closest_name(name, &known).as_deref(), expected, "{name:?}");
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("gcra", "gcra"), 0);
        assert_eq!(edit_distance("abc", ""), 3, "every letter deleted");
        assert_eq!(edit_distance("sitting", "kitten"), 3, "symmetric");
    }

    #[test]
    fn a_long_name_may_have_a_typo_per_four_letters_and_two_letters_are_enough() {
        let known: Vec<String> = Registry::default().names().map(String::from).collect();
        // 22 letters, 3 wrong: within 22 / 4 = 5; no other name has a part in common.
        assert_eq!(
            closest_name("slidimg_windox_cointer", &known).as_deref(),
            Some("sliding_window_counter")
        );
        assert_eq!(closest_name("gc", &known).as_deref(), Some("gcra"));
    }

    #[test]
    fn with_the_presets_a_name_two_entries_contain_is_not_guessed() {
        let known: Vec<String> = Registry::standard().names().map(String::from).collect();
        assert_eq!(
            closest_name("fixed", &known),
            None,
            "fixed_window or limits_…?"
        );
        assert_eq!(
            closest_name("limits_moving", &known).as_deref(),
            Some("limits_moving_window")
        );
        assert_eq!(closest_name("govenor", &known).as_deref(), Some("governor"));
    }
}
