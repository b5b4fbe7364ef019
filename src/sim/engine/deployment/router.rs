//! The load balancer: which node each request attempt goes to.
//!
//! It only routes; it never decides a request. Every algorithm's run gets its own
//! router from the same settings and seed, so with open clients every algorithm sees
//! every request at the same node.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::sim::{Balancer, Deployment, KeyTable};

/// The random balancer's stream of the seed (traffic sources use 1, 2, …; retry
/// jitter 0): far from both.
const RANDOM_STREAM: u64 = u64::MAX;

/// Picks a node for each attempt.
pub(super) struct Router {
    balancer: Balancer,
    nodes: u32,
    /// Attempts routed so far (round robin).
    routed: u64,
    rng: ChaCha8Rng,
    /// Each key's node under `key_hash`, computed once (`u32::MAX`: not yet).
    sticky: Vec<u32>,
}

impl Router {
    pub(super) fn new(d: &Deployment, seed: u64) -> Router {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(RANDOM_STREAM);
        Router {
            balancer: d.balancer,
            nodes: d.nodes,
            routed: 0,
            rng,
            sticky: Vec::new(),
        }
    }

    /// The node for the next attempt, by `key` (named in `keys`).
    #[inline]
    pub(super) fn pick(&mut self, key: u32, keys: &KeyTable) -> u32 {
        let n = self.nodes;
        match self.balancer {
            Balancer::RoundRobin => {
                let node = (self.routed % u64::from(n)) as u32;
                self.routed += 1;
                node
            }
            Balancer::Random => self.rng.random_range(0..n),
            Balancer::KeyHash => {
                let i = key as usize;
                if i >= self.sticky.len() {
                    self.sticky.resize(i + 1, u32::MAX);
                }
                if self.sticky[i] == u32::MAX {
                    self.sticky[i] = (fnv1a(keys.name(key)) % u64::from(n)) as u32;
                }
                self.sticky[i]
            }
        }
    }
}

/// FNV-1a (64-bit) of a key's name: stable across runs, machines and versions.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::fnv1a;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
