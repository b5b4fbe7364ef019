//! Several limits on one key ("10 per second AND 1000 per day") as one atomic decision.
//!
//! [`Composite`] is itself an [`Algorithm`] whose state holds every rule's state, so the
//! keyed limiter's one per-key lock covers all of them: the check across all rules and
//! the consumption from all rules happen in one critical section. If any rule denies,
//! nothing is consumed from any rule. This module does no locking of its own.

use crate::algorithm::Algorithm;
use crate::limiter::{RateLimiter, decision, status};
use crate::rule::{Decision, Rule};
use crate::time::{Clock, Nanos};

/// All of `rules` must admit a request; each is enforced by its own algorithm.
///
/// ```
/// use ratesim::{Composite, FakeClock, Nanos, RateLimiter, Registry, Rule};
/// let registry = Registry::default();
/// let per_second = registry.create("token_bucket", Rule::new(10, Nanos::from_secs(1))?)?;
/// let per_day = registry.create("fixed_window", Rule::new(12, Nanos::from_secs(86_400))?)?;
/// let limiter = RateLimiter::with_clock(Composite::new(vec![per_second, per_day])?, FakeClock::default());
/// let admitted = (0..20).filter(|_| limiter.try_acquire_all("k", 1).decision.allowed).count();
/// assert_eq!(admitted, 10); // the per-second burst binds first
/// let d = limiter.try_acquire_all("k", 1);
/// assert_eq!(d.denied_by, Some(0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Composite<A: Algorithm> {
    parts: Vec<A>,
    rule: Rule,
}

/// A composite with no rules: nothing would ever be limited, which is never intended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a composite limit needs at least one rule")]
pub struct EmptyComposite;

impl<A: Algorithm> Composite<A> {
    /// Combines `parts`; the request must pass all of them.
    pub fn new(parts: Vec<A>) -> Result<Composite<A>, EmptyComposite> {
        // `rule()` reports the tightest rule by capacity, for display.
        let rule = *parts
            .iter()
            .min_by_key(|p| p.capacity())
            .ok_or(EmptyComposite)?
            .rule();
        Ok(Composite { parts, rule })
    }

    /// The combined algorithms, in order.
    pub fn parts(&self) -> &[A] {
        &self.parts
    }

    /// The index of the rule that keeps a request of `cost` waiting longest (the one
    /// that denied it), or `None` if it would pass now.
    pub fn binding_rule(&self, state: &[A::State], now: Nanos, cost: u64) -> Option<usize> {
        longest_wait(
            self.parts
                .iter()
                .zip(state)
                .map(|(p, s)| p.retry_after(s, now, cost)),
        )
    }

    /// Each rule's own view, as decisions (`allowed` = a request of cost 1 would pass
    /// that rule now).
    pub fn per_rule(&self, state: &[A::State], now: Nanos) -> Vec<Decision> {
        self.parts
            .iter()
            .zip(state)
            .map(|(p, s)| status(p, s, now))
            .collect()
    }
}

impl<A: Algorithm> Algorithm for Composite<A> {
    type State = Vec<A::State>;

    /// The parts' name when they are all one algorithm (several rules enforced by,
    /// say, the token bucket), otherwise `"composite"`.
    fn name(&self) -> &str {
        match self.parts.split_first() {
            Some((first, rest)) if rest.iter().all(|p| p.name() == first.name()) => first.name(),
            _ => "composite",
        }
    }

    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn capacity(&self) -> u64 {
        self.parts
            .iter()
            .map(Algorithm::capacity)
            .min()
            .unwrap_or(0)
    }

    fn new_state(&self, now: Nanos) -> Self::State {
        self.parts.iter().map(|p| p.new_state(now)).collect()
    }

    fn renew(&self, state: &mut Self::State, now: Nanos) {
        for (p, s) in self.parts.iter().zip(state.iter_mut()) {
            p.renew(s, now);
        }
    }

    fn try_acquire(&self, state: &mut Self::State, now: Nanos, cost: u64) -> bool {
        // Check every rule first; a denial by one must not consume from the others.
        let all_pass = self
            .parts
            .iter()
            .zip(state.iter())
            .all(|(p, s)| p.retry_after(s, now, cost) == Some(Nanos::ZERO));
        // On a denial every rule still sees the instant (a cost-0 acquire consumes
        // nothing), so each keeps the same notion of "latest time" and a backwards
        // clock stays a no-op for the composite as a whole.
        let take = if all_pass { cost } else { 0 };
        for (p, s) in self.parts.iter().zip(state.iter_mut()) {
            let passed = p.try_acquire(s, now, take);
            debug_assert!(passed, "retry_after 0 (or cost 0) promised a pass");
        }
        all_pass
    }

    /// Every rule would pass: asked of each part, so no part's state is copied.
    fn would_pass(&self, state: &Self::State, now: Nanos, cost: u64) -> bool {
        self.parts
            .iter()
            .zip(state)
            .all(|(p, s)| p.would_pass(s, now, cost))
    }

    fn remaining(&self, state: &Self::State, now: Nanos) -> u64 {
        self.parts
            .iter()
            .zip(state)
            .map(|(p, s)| p.remaining(s, now))
            .min()
            .unwrap_or(0)
    }

    fn retry_after(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<Nanos> {
        // Each rule's wait assumes nothing else happens, and waiting never makes another
        // rule tighter, so the longest wait is when all of them pass.
        let mut longest = Nanos::ZERO;
        for (p, s) in self.parts.iter().zip(state) {
            longest = longest.max(p.retry_after(s, now, cost)?);
        }
        Some(longest)
    }

    fn reset_after(&self, state: &Self::State, now: Nanos) -> Nanos {
        self.parts
            .iter()
            .zip(state)
            .map(|(p, s)| p.reset_after(s, now))
            .max()
            .unwrap_or(Nanos::ZERO)
    }

    fn is_idle(&self, state: &Self::State, now: Nanos) -> bool {
        self.parts.iter().zip(state).all(|(p, s)| p.is_idle(s, now))
    }

    fn binding_rule(&self, state: &Self::State, now: Nanos, cost: u64) -> Option<usize> {
        Composite::binding_rule(self, state, now, cost)
    }
}

/// The index of the longest of `waits` (`None`, can never pass, outranks any finite
/// wait; the first of equals wins), skipping those that pass now; `None` if all pass.
pub(crate) fn longest_wait(waits: impl Iterator<Item = Option<Nanos>>) -> Option<usize> {
    let mut worst: Option<(usize, Option<Nanos>)> = None;
    for (i, wait) in waits.enumerate() {
        if wait == Some(Nanos::ZERO) {
            continue;
        }
        let longer = match (worst, wait) {
            (None, _) => true,
            (Some((_, None)), _) => false,
            (Some((_, Some(_))), None) => true,
            (Some((_, Some(w))), Some(v)) => v > w,
        };
        if longer {
            worst = Some((i, wait));
        }
    }
    worst.map(|(i, _)| i)
}

/// The outcome of a composite request: the overall decision, which rule denied it, and
/// each rule's own view (for one `RateLimit` header item per rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompositeDecision {
    /// Allowed only if every rule allowed; `retry_after` is the longest wait.
    pub decision: Decision,
    /// The index of the rule that denied (the one with the longest wait).
    pub denied_by: Option<usize>,
    /// Each rule's state after this request, in rule order.
    pub per_rule: Vec<Decision>,
}

impl<A: Algorithm, K: std::hash::Hash + Eq, C: Clock> RateLimiter<Composite<A>, K, C> {
    /// Checks and consumes `cost` on every rule at once, under the key's one lock, and
    /// reports which rule denied. A cost above the tightest capacity is denied with
    /// `retry_after = Nanos::MAX` and `denied_by` naming that rule.
    pub fn try_acquire_all<Q>(&self, key: &Q, cost: u64) -> CompositeDecision
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.with_state(key, |algo, state, now| {
            let denied_by = algo.binding_rule(state, now, cost);
            let allowed = algo.try_acquire(state, now, cost);
            CompositeDecision {
                decision: decision(algo, state, now, cost, allowed),
                denied_by: if allowed { None } else { denied_by },
                per_rule: algo.per_rule(state, now),
            }
        })
    }
}
