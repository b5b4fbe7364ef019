//! Algorithm names → constructors (the seed's factory), open for extension.
//!
//! The registry only builds algorithms; it holds no state and reads no clock.

use std::fmt;
use std::sync::Arc;

use crate::algorithm::{
    BoxedAlgorithm, DESCRIPTIONS, FixedWindow, Gcra, LeakyBucket, SlidingWindowCounter,
    SlidingWindowLog, TokenBucket,
};
use crate::rule::Rule;

type Constructor = Arc<dyn Fn(Rule) -> BoxedAlgorithm + Send + Sync>;
type Builtin = (&'static str, fn(Rule) -> BoxedAlgorithm);

/// Builds algorithms by name. [`Registry::default`] knows the six built-ins.
///
/// ```
/// use ratesim::{Algorithm, Nanos, Registry, Rule};
/// let registry = Registry::default();
/// let rule = Rule::new(5, Nanos::from_secs(10))?;
/// let algo = registry.create("sliding_window_log", rule)?;
/// assert_eq!(algo.name(), "sliding_window_log");
/// let err = registry.create("token_buckett", rule).unwrap_err();
/// assert!(err.to_string().contains("token_bucket"), "the error lists the known names");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Entry>,
}

#[derive(Clone)]
struct Entry {
    name: String,
    description: String,
    build: Constructor,
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
        write!(f, "; expected one of: {}, or `all`", self.known.join(", "))
    }
}

impl std::error::Error for UnknownAlgorithm {}

impl Default for Registry {
    fn default() -> Registry {
        let mut registry = Registry {
            entries: Vec::new(),
        };
        let builtins: [Builtin; 6] = [
            ("token_bucket", |r| BoxedAlgorithm::new(TokenBucket::new(r))),
            ("leaky_bucket", |r| BoxedAlgorithm::new(LeakyBucket::new(r))),
            ("fixed_window", |r| BoxedAlgorithm::new(FixedWindow::new(r))),
            ("sliding_window_log", |r| {
                BoxedAlgorithm::new(SlidingWindowLog::new(r))
            }),
            ("sliding_window_counter", |r| {
                BoxedAlgorithm::new(SlidingWindowCounter::new(r))
            }),
            ("gcra", |r| BoxedAlgorithm::new(Gcra::new(r))),
        ];
        for (name, build) in builtins {
            let description = DESCRIPTIONS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, d)| d);
            registry.register(name, description, build);
        }
        registry
    }
}

impl Registry {
    /// Adds (or replaces) the algorithm called `name`.
    pub fn register(
        &mut self,
        name: &str,
        description: &str,
        build: impl Fn(Rule) -> BoxedAlgorithm + Send + Sync + 'static,
    ) {
        let entry = Entry {
            name: name.to_string(),
            description: description.to_string(),
            build: Arc::new(build),
        };
        match self.entries.iter_mut().find(|e| e.name == name) {
            Some(existing) => *existing = entry,
            None => self.entries.push(entry),
        }
    }

    /// Builds the algorithm called `name` for `rule`.
    pub fn create(&self, name: &str, rule: Rule) -> Result<BoxedAlgorithm, UnknownAlgorithm> {
        let entry = self.find(name)?;
        Ok((entry.build)(rule))
    }

    /// Registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// The one-line description of `name`.
    pub fn description(&self, name: &str) -> Result<&str, UnknownAlgorithm> {
        Ok(&self.find(name)?.description)
    }

    /// Expands a list of names where `all` means every registered one, keeping order
    /// and dropping repeats; an unknown name is an error that lists the known ones.
    pub fn resolve<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<String>, UnknownAlgorithm> {
        let mut out: Vec<String> = Vec::new();
        for name in names {
            let name = name.as_ref().trim();
            let expanded: Vec<&str> = if name == "all" {
                self.names().collect()
            } else {
                vec![self.find(name)?.name.as_str()]
            };
            for n in expanded {
                if !out.iter().any(|o| o == n) {
                    out.push(n.to_string());
                }
            }
        }
        Ok(out)
    }

    fn find(&self, name: &str) -> Result<&Entry, UnknownAlgorithm> {
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
fn edit_distance(a: &str, b: &str) -> usize {
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
        let known: Vec<String> = Registry::default().names().map(String::from).collect();
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
    }
}
