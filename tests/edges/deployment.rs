//! `[deployment]` (docs/scenarios.md): the balancers, the nodes' clocks, where a shared
//! store's decision is stamped, and `local_split`'s shares, each at an input where the
//! documented rule and its neighbours route, stamp or split differently.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use ratesim::Nanos;
use ratesim::sim::RunReport;

use crate::sim_support::Row;
use crate::{S, replay, run_text};

/// FNV-1a, 64 bits, as published (offset basis 14695981039346656037, prime
/// 1099511628211): the hash docs/scenarios.md names for `key_hash`, written here from
/// the specification, not from the code under test.
fn fnv1a_64(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The 32-bit FNV-1a (offset basis 2166136261, prime 16777619): a plausible wrong hash.
fn fnv1a_32(text: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// FNV-1 (multiply, then xor): the other plausible wrong hash.
fn fnv1_64(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= u64::from(b);
    }
    h
}

/// The clients of the `key_hash` test and how many requests each sends (powers of two,
/// so a node's attempt count says exactly which clients reached it).
const CLIENTS: [(&str, u64); 6] = [
    ("alice", 1),
    ("bob", 2),
    ("carol", 4),
    ("dave", 8),
    ("erin", 16),
    ("frank", 32),
];

/// Each client's requests as one uniform source named `{prefix}-0`, over one second,
/// behind `nodes` local limiters with the balancer `balancer`.
fn one_source_per_client(nodes: u32, balancer: &str) -> RunReport {
    let mut text = "name = \"edge\"\nduration = \"1s\"\nalgorithms = [\"fixed_window\"]\n\
                    [limit]\nmax_requests = 1000\nwindow = \"1h\"\n"
        .to_string();
    for (prefix, count) in CLIENTS {
        text.push_str(&format!(
            "[[traffic]]\nkind = \"uniform\"\nrate = {count}\nkey_prefix = \"{prefix}\"\n"
        ));
    }
    text.push_str(&format!(
        "[deployment]\nnodes = {nodes}\nbalancer = \"{balancer}\"\nstore = \"local\"\n"
    ));
    run_text(&text).0
}

/// Each node's attempts, in node order.
fn attempts(report: &RunReport) -> Vec<u64> {
    report.algorithms[0]
        .nodes
        .iter()
        .map(|n| n.attempts)
        .collect()
}

/// The per-node attempt counts `route` gives the clients of [`CLIENTS`].
fn spread_by(nodes: u32, route: impl Fn(&str) -> u32) -> Vec<u64> {
    let mut per_node = vec![0; nodes as usize];
    for (prefix, count) in CLIENTS {
        per_node[route(&format!("{prefix}-0")) as usize] += count;
    }
    per_node
}

/// `key_hash`: node = FNV-1a(key name) mod nodes, "stable across runs, machines and
/// versions". At 3, 5 and 7 nodes (not powers of two: a hash cut to 32 bits routes
/// like the full one only at 1, 2 or 4 nodes), the routes are the ones the published
/// hash gives. Rules out the hash cut to 32 bits, the 32-bit FNV-1a, FNV-1, and
/// reducing by the high bits (`hash · n >> 64`) instead of the remainder.
#[test]
fn key_hash_routes_each_client_by_the_64_bit_fnv1a_of_its_name_mod_the_node_count() {
    // The hash itself, against the published test vectors.
    assert_eq!(fnv1a_64(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a_64("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a_64("foobar"), 0x8594_4171_f739_67e8);
    assert_eq!(fnv1a_32("foobar"), 0xbf9c_f968);
    for nodes in [3u32, 5, 7] {
        let n = u64::from(nodes);
        let documented = spread_by(nodes, |k| (fnv1a_64(k) % n) as u32);
        let alternatives = [
            (
                "cut to 32 bits",
                spread_by(nodes, |k| (fnv1a_64(k) as u32) % nodes),
            ),
            ("32-bit FNV-1a", spread_by(nodes, |k| fnv1a_32(k) % nodes)),
            ("FNV-1", spread_by(nodes, |k| (fnv1_64(k) % n) as u32)),
            (
                "high bits",
                spread_by(nodes, |k| {
                    ((u128::from(fnv1a_64(k)) * u128::from(n)) >> 64) as u32
                }),
            ),
        ];
        for (what, spread) in &alternatives {
            assert_ne!(
                &documented, spread,
                "{nodes} nodes: {what} routes alike here"
            );
        }
        let report = one_source_per_client(nodes, "key_hash");
        assert_eq!(attempts(&report), documented, "{nodes} nodes");
    }
    // Pinned as numbers too (worked out apart, from the published algorithm), so that
    // a change to this file's hash cannot hide one of the code's: at 3 nodes alice,
    // bob, carol, dave, erin and frank go to nodes 0, 1, 1, 0, 2, 0.
    for (nodes, per_node) in [
        (3, &[41, 6, 16][..]),
        (5, &[0, 40, 19, 0, 4][..]),
        (7, &[8, 0, 0, 20, 34, 1, 0][..]),
    ] {
        assert_eq!(
            attempts(&one_source_per_client(nodes, "key_hash")),
            per_node
        );
    }
}

/// `round_robin`: attempt `j` of the whole stream, retries included, goes to node
/// `j mod nodes`, starting at node 0. One client, 1 per 10 s on each of 3 local
/// limiters, one retry: the denial at 3 ms (node 0) is retried at 10 s and goes to
/// node 1, the next arrival to node 2. Rules out starting at node 1, a retry kept on
/// its arrival's node, and a counter of arrivals only (the retry not advancing it).
#[test]
fn round_robin_counts_every_attempt_retries_included_from_node_0() {
    let rows = [0, 1, 2, 3, 11_000].map(|ms| (ms * 1_000_000, "c", 1));
    let (report, decisions) = replay(
        &rows,
        "30s",
        &["fixed_window"],
        "[limit]\nmax_requests = 1\nwindow = \"10s\"\n\
         [client]\nkind = \"retry\"\nmax_retries = 1\n\
         [deployment]\nnodes = 3\nbalancer = \"round_robin\"\nstore = \"local\"\n",
    );
    let allowed: Vec<(u64, u32, bool)> = decisions[0]
        .iter()
        .map(|r| (r.time.as_u64() / 1_000_000, r.attempt, r.allowed))
        .collect();
    assert_eq!(
        allowed,
        [
            (0, 0, true),
            (1, 0, true),
            (2, 0, true),
            (3, 0, false),
            (10_000, 1, true),
            (11_000, 0, true)
        ]
    );
    let nodes: Vec<(u64, u64, u64)> = report.algorithms[0]
        .nodes
        .iter()
        .map(|n| (n.attempts, n.allowed, n.denied))
        .collect();
    assert_eq!(nodes, [(2, 1, 1), (2, 2, 0), (2, 2, 0)]);
}

/// `random`: a uniform node per attempt from ChaCha8 stream 2⁶⁴ − 1 of the seed. With
/// 1 per hour on each of 5 local limiters, an attempt is admitted exactly when it is
/// the first to reach its node, so the decisions give away the order of the draws.
/// Rules out any other stream of the seed (0: the retry jitter's; 1: the first
/// source's), and another seed.
#[test]
fn random_routing_draws_each_attempt_from_chacha8_stream_u64_max_of_the_seed() {
    let draws = |seed: u64, stream: u64| -> (Vec<bool>, Vec<u64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        let (mut seen, mut counts) = (vec![false; 5], vec![0; 5]);
        let first = (0..40)
            .map(|_| {
                let node: usize = rng.random_range(0..5u32) as usize;
                counts[node] += 1;
                !std::mem::replace(&mut seen[node], true)
            })
            .collect();
        (first, counts)
    };
    let documented = draws(7, u64::MAX);
    for other in [draws(7, 0), draws(7, 1), draws(8, u64::MAX)] {
        assert_ne!(documented, other, "an alternative draws alike");
    }
    let rows: Vec<(u64, &str, u64)> = (0..40).map(|i| (i * S / 10, "c", 1)).collect();
    let (report, decisions) = replay(
        &rows,
        "10s",
        &["fixed_window"],
        "seed = 7\n[limit]\nmax_requests = 1\nwindow = \"1h\"\n\
         [deployment]\nnodes = 5\nbalancer = \"random\"\nstore = \"local\"\n",
    );
    let allowed: Vec<bool> = decisions[0].iter().map(|r| r.allowed).collect();
    assert_eq!((allowed, attempts(&report)), documented);
}

/// Node clocks: node `i`'s offset is `−skew + floor(2·skew·i / (nodes − 1))`, and its
/// clock never reads below 0. At 4 nodes and a skew of 10 s the middle offsets do not
/// divide evenly: −3.333333334 s and +3.333333333 s. A fixed window's advised wait
/// (`(k + 1)·W − reading`) shows each reading: the second request at node 0 reads 0 at
/// 5 s (floored, not −5 s, not 5 s) and waits 10 s. Rules out rounding to nearest or
/// up, truncating `(2i − (n − 1))·skew / (n − 1)` towards zero, and a clock that is not
/// floored (unchanged or mirrored when negative).
#[test]
fn skew_offsets_are_floored_and_a_clock_behind_true_time_reads_no_less_than_zero() {
    // Round robin: five requests at 5 s (nodes 0, 1, 2, 3, 0), six at 20 s (1, 2, 3,
    // 0, 1, 2). 1 per 10 s on every node.
    let mut rows: Vec<(u64, &str, u64)> = vec![(5 * S, "c", 1); 5];
    rows.extend([(20 * S, "c", 1); 6]);
    let (report, decisions) = replay(
        &rows,
        "60s",
        &["fixed_window"],
        "[limit]\nmax_requests = 1\nwindow = \"10s\"\n\
         [deployment]\nnodes = 4\nstore = \"local\"\nclock_skew = \"10s\"\n",
    );
    let offsets: Vec<i64> = report.algorithms[0]
        .nodes
        .iter()
        .map(|n| n.clock_offset_ns)
        .collect();
    assert_eq!(
        offsets,
        [
            -10_000_000_000,
            -3_333_333_334,
            3_333_333_333,
            10_000_000_000
        ]
    );
    let advice: Vec<Option<u64>> = decisions[0]
        .iter()
        .map(|r| (!r.allowed).then(|| r.retry_after.unwrap().as_u64()))
        .collect();
    let none = None;
    assert_eq!(
        advice,
        [
            none,
            none,
            none,
            none,
            // Node 0 reads max(5 s − 10 s, 0) = 0 twice: the window [0, 10 s) is full.
            Some(10 * S),
            none,
            none,
            none,
            none,
            // Node 1 reads 20 s − 3.333333334 s = 16.666666666 s.
            Some(3_333_333_334),
            // Node 2 reads 20 s + 3.333333333 s = 23.333333333 s.
            Some(6_666_666_667),
        ]
    );
}

/// `shared` (the store's clock): one check-and-consume at `t + latency`, stamped by
/// the store. 1 per 10 s, 200 ms away: requests sent at 9.7 s and 9.85 s reach the
/// store at 9.9 s and 10.05 s, on either side of the window's edge, and both pass; one
/// sent at 9.9 s reaches it at 10.1 s and is told to wait 9.9 s. Rules out stamping
/// the send time (both in window 0), the answer's time `t + 2·latency` (both in window
/// 1), and an advised wait measured from the send.
#[test]
fn a_shared_store_stamps_a_decision_when_the_request_reaches_it() {
    let rows = [9_700, 9_850, 9_900].map(|ms| (ms * 1_000_000, "c", 1));
    let (_, decisions) = replay(
        &rows,
        "30s",
        &["fixed_window"],
        "[limit]\nmax_requests = 1\nwindow = \"10s\"\n\
         [deployment]\nnodes = 1\nstore = \"shared\"\nlatency = \"200ms\"\n",
    );
    assert_eq!(
        decisions_of(&decisions[0]),
        [(true, 0), (true, 0), (false, 9_900)]
    );
}

/// `shared_racy`: the read lands at `t + latency`, but the node decides on its copy
/// with its own clock's reading `t`. 1 per 10 s, 200 ms away: the request at 9.9 s
/// reads the state written at 0.6 s, and decides at 9.9 s, inside the window of the
/// first admission: denied, told 100 ms. Rules out deciding at the read's instant
/// (10.1 s, a new window: admitted).
#[test]
fn a_racy_store_is_decided_by_the_nodes_clock_not_the_reads_arrival() {
    let rows = [0, 9_900].map(|ms| (ms * 1_000_000, "c", 1));
    let (_, decisions) = replay(
        &rows,
        "30s",
        &["fixed_window"],
        "[limit]\nmax_requests = 1\nwindow = \"10s\"\n\
         [deployment]\nnodes = 1\nstore = \"shared_racy\"\nlatency = \"200ms\"\n",
    );
    assert_eq!(decisions_of(&decisions[0]), [(true, 0), (false, 100)]);
}

/// `(allowed, retry_after in ms)` of each decision.
fn decisions_of(rows: &[Row]) -> Vec<(bool, u64)> {
    rows.iter()
        .map(|r| {
            (
                r.allowed,
                r.retry_after.unwrap_or(Nanos::MAX).as_u64() / 1_000_000,
            )
        })
        .collect()
}

/// `local_split`: `max_requests` and `burst` are each divided by the node count,
/// rounded down, the remainder one apiece to the first nodes. 10 per hour with a burst
/// of 7 over 4 nodes: the fixed window (whose capacity is `max_requests`) admits 3, 3,
/// 2, 2 of five requests per node; the token bucket (capacity: the burst) 2, 2, 2, 1.
/// Rules out the remainder to the last nodes, every share rounded up or down, and the
/// burst's share taken from `max_requests`'s.
#[test]
fn local_split_divides_max_and_burst_apart_giving_the_remainder_to_the_first_nodes() {
    let rows = vec![(0, "c", 1); 20];
    let (report, _) = replay(
        &rows,
        "10s",
        &["fixed_window", "token_bucket"],
        "[limit]\nmax_requests = 10\nwindow = \"1h\"\nburst = 7\n\
         [deployment]\nnodes = 4\nstore = \"local_split\"\n",
    );
    let admitted = |i: usize| -> Vec<u64> {
        report.algorithms[i]
            .nodes
            .iter()
            .map(|n| n.allowed)
            .collect()
    };
    assert_eq!(report.algorithms[0].name, "fixed_window");
    assert_eq!(admitted(0), [3, 3, 2, 2]);
    assert_eq!(admitted(1), [2, 2, 2, 1]);
}
