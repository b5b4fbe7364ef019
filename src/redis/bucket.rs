//! The bucket family on Redis: the token bucket (levels fill up), and the leaky bucket
//! and GCRA (levels drain down; GCRA's scaled `TAT − t` is the leaky bucket's water, so
//! it is the same arithmetic), all computed by `lua/bucket.lua`.

use super::error::{Bound, ELAPSED_MAX, EXACT_LIMIT};
use super::script::{Family, Part};
use super::{Scripted, Unrepresentable};
use crate::algorithm::{Algorithm, Gcra, LeakyBucket, TokenBucket};
use crate::rule::Rule;

impl Scripted for TokenBucket {
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable> {
        part(self, "token_bucket", "fill")
    }
}

impl Scripted for LeakyBucket {
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable> {
        part(self, "leaky_bucket", "drain")
    }
}

impl Scripted for Gcra {
    fn parts(&self) -> Result<Vec<Part>, Unrepresentable> {
        part(self, "gcra", "drain")
    }
}

/// The script's parameters (`max'`, `unit'`, `burst`, direction), or the bound the rule
/// breaks.
fn part<A: Algorithm>(
    algorithm: &A,
    name: &'static str,
    direction: &str,
) -> Result<Vec<Part>, Unrepresentable> {
    let rule = *algorithm.rule();
    if let Some(bound) = broken_bound(&rule) {
        return Err(Unrepresentable {
            algorithm: name,
            rule,
            bound,
        });
    }
    let (max, unit) = scaled(&rule);
    let params = vec![
        max.to_string(),
        unit.to_string(),
        rule.burst().to_string(),
        direction.to_owned(),
    ];
    Ok(vec![Part::new(algorithm, name, Family::Bucket, params)])
}

/// `(max / g, W / g)` with `g = gcd(W, max)`.
fn scaled(rule: &Rule) -> (u128, u128) {
    let (max, w) = (rule.max_requests(), rule.window().as_u64());
    let g = gcd(max, w);
    (u128::from(max / g), u128::from(w / g))
}

/// The first bound `rule` breaks, if any (see `lua/bucket.lua`).
fn broken_bound(rule: &Rule) -> Option<Bound> {
    let (max, unit) = scaled(rule);
    let cap = u128::from(rule.burst()) * unit;
    let value = cap + max.max(unit);
    if value > EXACT_LIMIT {
        return Some(Bound::Exact { value });
    }
    let value = cap.div_ceil(max);
    if value > ELAPSED_MAX {
        return Some(Bound::RefillTime { value });
    }
    None
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Nanos;

    fn rule(max: u64, w: u64, burst: u64) -> Rule {
        Rule::new(max, Nanos::new(w))
            .unwrap()
            .with_burst(burst)
            .unwrap()
    }

    #[test]
    fn bounds_divide_by_the_gcd_first() {
        // 5000/h burst 5000: g = 5000, so cap' = 5000 · 7.2e8 = 3.6e12.
        assert_eq!(broken_bound(&rule(5000, 3_600_000_000_000, 5000)), None);
        // 7/h burst 10^4: g = 1, cap = 3.6e16 > 2^53.
        assert!(matches!(
            broken_bound(&rule(7, 3_600_000_000_000, 10_000)),
            Some(Bound::Exact { .. })
        ));
    }

    #[test]
    fn the_largest_exact_rule_passes_and_one_more_token_does_not() {
        // W = 1 ns, max = 2^20: burst + 2^20 ≤ 2^53.
        let largest = (1 << 53) - (1 << 20);
        assert_eq!(broken_bound(&rule(1 << 20, 1, largest)), None);
        assert_eq!(
            broken_bound(&rule(1 << 20, 1, largest + 1)),
            Some(Bound::Exact {
                value: EXACT_LIMIT + 1
            })
        );
        // max = 1, W = 1: the refill time bites first: burst ≤ ELAPSED_MAX.
        let longest = ELAPSED_MAX as u64;
        assert_eq!(broken_bound(&rule(1, 1, longest)), None);
        assert_eq!(
            broken_bound(&rule(1, 1, longest + 1)),
            Some(Bound::RefillTime {
                value: ELAPSED_MAX + 1
            })
        );
    }
}
