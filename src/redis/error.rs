//! The Redis store's typed errors. None of them ever holds a credential: texts from
//! redis-rs are scrubbed of the URL's password, and no URL is ever quoted.

use redis::{ErrorKind, ServerErrorKind};

use super::FailurePolicy;
use crate::limiter::InsufficientCapacity;
use crate::rule::{Decision, Rule};

/// Why Redis could not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// No reply within the limiter's timeout. The script may or may not have run, so the
    /// decision is never resent.
    Timeout,
    /// The server could not be reached, or the connection broke.
    Connection,
    /// Wrong or missing credentials (`WRONGPASS`, `NOAUTH`), or an ACL forbids a
    /// command the script needs (`NOPERM`).
    Auth,
    /// The server answered with an error (out of memory, read-only replica, a script
    /// error…).
    Server,
    /// The URL or the key prefix is not usable.
    InvalidConfig,
    /// The server no longer holds the store's keys: its marker key, written when the
    /// store was opened, is gone (a `FLUSHALL`/`FLUSHDB`, a restart without
    /// persistence, or no call for the marker's TTL). The script wrote nothing. See
    /// [`RedisStore::state_losses`](super::RedisStore::state_losses).
    StateLost,
}

/// Redis could not make a decision, and why. Its texts never hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("redis {}: {detail}", kind_text(*.kind))]
pub struct StoreError {
    kind: FailureKind,
    detail: String,
}

fn kind_text(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Timeout => "timed out",
        FailureKind::Connection => "connection failed",
        FailureKind::Auth => "authentication failed",
        FailureKind::Server => "server error",
        FailureKind::InvalidConfig => "configuration error",
        FailureKind::StateLost => "state lost",
    }
}

impl StoreError {
    pub(super) fn new(kind: FailureKind, detail: String) -> StoreError {
        StoreError { kind, detail }
    }

    /// Classifies a redis-rs error and keeps its text with every one of `secrets`
    /// blanked out.
    pub(super) fn from_redis(e: &redis::RedisError, secrets: &[String]) -> StoreError {
        let code = e.code().unwrap_or("");
        let text = e.to_string();
        // An ACL refusal inside a script is not NOPERM on 7.0 but `ERR The user executing
        // the script can't run this command …` (or `… can't access … keys …`).
        let script_acl = text.contains("user executing the script can't");
        let kind = if code == "STATELOST" {
            FailureKind::StateLost
        } else if e.is_timeout() {
            FailureKind::Timeout
        } else if e.kind() == ErrorKind::AuthenticationFailed
            || matches!(code, "WRONGPASS" | "NOAUTH" | "NOPERM")
            || e.kind() == ErrorKind::Server(ServerErrorKind::NoPerm)
            || script_acl
        {
            FailureKind::Auth
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            FailureKind::Connection
        } else if e.kind() == ErrorKind::InvalidClientConfig {
            FailureKind::InvalidConfig
        } else {
            FailureKind::Server
        };
        let mut detail = text;
        if kind == FailureKind::StateLost {
            detail = "the server no longer holds the keys written since the store was \
                      opened (a FLUSHALL or FLUSHDB, or a restart without persistence): \
                      from here on, limits would start again from fresh states"
                .into();
        }
        for secret in secrets {
            detail = detail.replace(secret.as_str(), "***");
        }
        StoreError { kind, detail }
    }

    /// What went wrong.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }
}

/// A decision a Redis limiter could not make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedisError {
    /// The cost exceeds the capacity: it can never pass (as in memory). Nothing was sent.
    #[error(transparent)]
    InsufficientCapacity(#[from] InsufficientCapacity),
    /// Redis did not answer. `fallback` is the limiter's [`FailurePolicy`] decision, for
    /// a caller that wants to go on: admitted when the policy is open, denied when closed.
    #[error("{error} (failing {}: the request is {})",
        if *.policy == FailurePolicy::Open { "open" } else { "closed" },
        if .fallback.allowed { "admitted" } else { "denied" })]
    Unavailable {
        /// Why Redis did not answer.
        error: StoreError,
        /// The limiter's policy.
        policy: FailurePolicy,
        /// The policy's decision.
        fallback: Decision,
    },
}

impl RedisError {
    /// The decision to act on: the policy's fallback when Redis was unavailable, `None`
    /// for a request that can never pass.
    pub fn fallback(&self) -> Option<Decision> {
        match self {
            RedisError::InsufficientCapacity(_) => None,
            RedisError::Unavailable { fallback, .. } => Some(*fallback),
        }
    }
}

/// The bound a rule broke: the largest value the script would form must stay an exact
/// integer in a double.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `(burst·W + max(W, max)) / g ≤ 2^53`, `g = gcd(W, max)`: the level, a refill
    /// and every division stay exact.
    Exact {
        /// `(burst·W + max(W, max)) / g` for the rule.
        value: u128,
    },
    /// `⌈burst·W / max⌉ ≤ 8 990 000 000 000 000 ns` (about 104 days): a full refill
    /// fits the longest elapsed time the script computes exactly.
    RefillTime {
        /// `⌈burst·W / max⌉` ns for the rule.
        value: u128,
    },
    /// `W ≤ 2^52` ns (about 52 days) for the fixed window and the sliding window
    /// counter: the script finds an instant's window (`t mod W`) and compares weighted
    /// counts by shift-and-add, exact only for moduli up to 2^52.
    Window {
        /// The rule's window in ns.
        value: u64,
    },
    /// `max_requests ≤ 2^52` for the windows and the sliding log: counts, a count plus
    /// a cost, and the counter's weights stay exact.
    Quota {
        /// The rule's `max_requests`.
        value: u64,
    },
}

/// `2^52`: the largest window (ns) and quota the window family and the log accept.
pub const WINDOW_LIMIT: u64 = 1 << 52;

/// `2^53`: doubles hold every integer up to it exactly.
pub const EXACT_LIMIT: u128 = 1 << 53;
/// The longest elapsed time (ns) the script forms exactly; longer gaps saturate to it.
pub const ELAPSED_MAX: u128 = 8_990_000_000_000_000;

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Exact { value } => write!(
                f,
                "(burst·W + max(W, max))/gcd(W, max) = {value} exceeds 2^53 = {EXACT_LIMIT}"
            ),
            Bound::RefillTime { value } => write!(
                f,
                "a full refill takes {value} ns, more than {ELAPSED_MAX} ns (about 104 days)"
            ),
            Bound::Window { value } => write!(
                f,
                "the window is {value} ns, more than 2^52 = {WINDOW_LIMIT} ns (about 52 days)"
            ),
            Bound::Quota { value } => {
                write!(f, "max_requests = {value} exceeds 2^52 = {WINDOW_LIMIT}")
            }
        }
    }
}

/// A rule the Redis script cannot compute exactly, refused when its limiter is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{algorithm} {rule} cannot be computed exactly in Redis: {bound}")]
pub struct Unrepresentable {
    /// The algorithm's registry name.
    pub algorithm: &'static str,
    /// The rule refused.
    pub rule: Rule,
    /// The bound it breaks.
    pub bound: Bound,
}
