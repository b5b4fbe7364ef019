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

/// An algorithm name the registry does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm `{name}`; expected one of: {}, or `all`", known.join(", "))]
pub struct UnknownAlgorithm {
    /// The name asked for.
    pub name: String,
    /// Every registered name, in registration order.
    pub known: Vec<String>,
}

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
        self.entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| UnknownAlgorithm {
                name: name.to_string(),
                known: self.names().map(str::to_string).collect(),
            })
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
