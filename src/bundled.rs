//! The scenarios shipped in `scenarios/`, compiled into the binary so `ratesim list`
//! and `ratesim compare` work from any directory. Text only; parsing is `sim`'s job.

/// `(file name, TOML text)` of every bundled scenario, in teaching order.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("burst.toml", include_str!("../scenarios/burst.toml")),
    ("uniform.toml", include_str!("../scenarios/uniform.toml")),
    ("poisson.toml", include_str!("../scenarios/poisson.toml")),
    ("on_off.toml", include_str!("../scenarios/on_off.toml")),
    (
        "zipf_keys.toml",
        include_str!("../scenarios/zipf_keys.toml"),
    ),
    (
        "retry_clients.toml",
        include_str!("../scenarios/retry_clients.toml"),
    ),
    (
        "trace_replay.toml",
        include_str!("../scenarios/trace_replay.toml"),
    ),
    (
        "nginx_log.toml",
        include_str!("../scenarios/nginx_log.toml"),
    ),
    (
        "nodes_local.toml",
        include_str!("../scenarios/nodes_local.toml"),
    ),
    (
        "nodes_split_sticky.toml",
        include_str!("../scenarios/nodes_split_sticky.toml"),
    ),
    (
        "nodes_racy.toml",
        include_str!("../scenarios/nodes_racy.toml"),
    ),
    (
        "nodes_skew.toml",
        include_str!("../scenarios/nodes_skew.toml"),
    ),
    (
        "nodes_synced.toml",
        include_str!("../scenarios/nodes_synced.toml"),
    ),
];

/// The built-in suite `ratesim compare` runs when no `--scenario` is given: steady,
/// random and adversarial traffic.
pub const COMPARE_SUITE: [&str; 3] = ["uniform.toml", "poisson.toml", "burst.toml"];

/// The text of the bundled scenario `file`, if there is one.
pub fn scenario(file: &str) -> Option<&'static str> {
    SCENARIOS
        .iter()
        .find(|(f, _)| *f == file)
        .map(|(_, text)| *text)
}
