//! FNV-1a, 64 bits: a hash that is the same across processes, builds, platforms and
//! versions, for names that must stay stable (Redis keys, the scenario fingerprint in
//! `run.json`), unlike the limiter's per-instance seeded hasher. Not for untrusted keys
//! in a hash table: it only spreads, it does not resist.

/// FNV-1a of `bytes`, 64 bits.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_the_published_test_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }
}
