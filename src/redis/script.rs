//! The Lua script a Redis limiter calls, what a rule looks like to it (a [`Part`]), and
//! its reply turned back into decisions. A script is the shared arithmetic
//! (`lua/common.lua`), the files of the algorithm families the limiter uses, and a
//! dispatcher (`lua/main.lua`) that decides over one part or a composite's many in one
//! call.
//! This module knows nothing of connections or keys' names.

use std::sync::LazyLock;

use redis::Script;

use crate::algorithm::Algorithm;
use crate::composite::{CompositeDecision, longest_wait};
use crate::rule::{Decision, Rule};
use crate::time::{NANOS_PER_SEC, Nanos};

/// The Lua files of the families, in [`Family::file`] order.
const FILES: [&str; 3] = [
    include_str!("lua/bucket.lua"),
    include_str!("lua/window.lua"),
    include_str!("lua/log.lua"),
];

/// A script per set of families (bit `i` = `FILES[i]`), each hashed once; `EVALSHA` by
/// that hash, `SCRIPT LOAD` on `NOSCRIPT`. Holding only the families a limiter uses
/// keeps each call from defining functions it never calls (the whole library costs a
/// single bucket ~15 µs more per call).
static SCRIPTS: LazyLock<Vec<Script>> = LazyLock::new(|| {
    (0..1 << FILES.len())
        .map(|set: usize| {
            let mut text = String::from(include_str!("lua/common.lua"));
            for (i, file) in FILES.iter().enumerate() {
                if set & (1 << i) != 0 {
                    text.push_str(file);
                }
            }
            text.push_str(include_str!("lua/main.lua"));
            Script::new(&text)
        })
        .collect()
});

/// Every command the scripts call (`redis.call`), lower case and sorted: what an ACL
/// user needs inside the scripts. Checked against the Lua sources by a unit test, so a
/// script that starts calling another command cannot leave this list (and the
/// documented ACL) behind.
pub const SCRIPT_COMMANDS: [&str; 12] = [
    "del",
    "get",
    "lindex",
    "llen",
    "lpop",
    "lrange",
    "lset",
    "pexpire",
    "pexpireat",
    "rpush",
    "set",
    "time",
];

/// The commands the store sends itself, besides the scripts': `EVALSHA` (every
/// decision), `SCRIPT LOAD` (after `NOSCRIPT`, and before a limiter's first pipeline of
/// a script), `PING` (opening) and `SET` (the marker key, at opening and after a loss).
/// ACL names.
pub const CLIENT_COMMANDS: [&str; 4] = ["evalsha", "ping", "script|load", "set"];

/// The safety TTL of every key written at a caller's instant: refreshed by each write,
/// so a key not written for this long (wall time) expires on its own, e.g. after the
/// process that wrote it was killed. Fake time has no relation to the server's clock,
/// so the state's own idle instant cannot serve, as it does for [`Now::Server`].
///
/// [`Now::Server`]: super::Now::Server
pub const CALLER_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// The mode argument of a decision at a caller's instant: `ttl<ms>`.
const CALLER_TTL_MODE: &str = "ttl3600000";

/// The script that computes `parts`.
pub(super) fn script_for(parts: &[Part]) -> &'static Script {
    let set = parts.iter().fold(0, |set, p| set | 1 << p.family.file());
    &SCRIPTS[set]
}

/// The fast paths: the same arguments, keys and reply as the general script, for one
/// part deciding and writing. The bucket family (`lua/fast_bucket.lua`), the fixed
/// window and the counter (`lua/fast_window.lua`), the log (`lua/fast_log.lua`); the
/// last two after `lua/fast_common.lua`.
static FAST_BUCKET: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/fast_bucket.lua")));
static FAST_WINDOW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/fast_common.lua"),
        include_str!("lua/fast_window.lua")
    ))
});
static FAST_LOG: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/fast_common.lua"),
        include_str!("lua/fast_log.lua")
    ))
});

/// The script for one call: a fast path when one covers the call (one part, a decision
/// that writes, no per-part detail), else [`script_for`].
pub(super) fn script_for_call(parts: &[Part], mode: Mode, detail: bool) -> &'static Script {
    match (parts, mode, detail) {
        ([part], Mode::Decide(_), false) => match part.family {
            Family::Bucket => &FAST_BUCKET,
            Family::Fixed | Family::Counter => &FAST_WINDOW,
            Family::Log => &FAST_LOG,
        },
        _ => script_for(parts),
    }
}

/// Which Lua family computes a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    /// Token bucket, leaky bucket, GCRA (`lua/bucket.lua`).
    Bucket,
    /// Fixed window (`lua/window.lua`).
    Fixed,
    /// Sliding window counter (`lua/window.lua`).
    Counter,
    /// Sliding window log (`lua/log.lua`): a state key and a list of entries.
    Log,
}

impl Family {
    /// The index of the family's file in [`FILES`].
    fn file(self) -> usize {
        match self {
            Family::Bucket => 0,
            Family::Fixed | Family::Counter => 1,
            Family::Log => 2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Family::Bucket => "bucket",
            Family::Fixed => "fixed",
            Family::Counter => "counter",
            Family::Log => "log",
        }
    }

    /// The suffixes of the part's keys after its base key.
    pub(super) fn key_suffixes(self) -> &'static [&'static str] {
        match self {
            Family::Log => &["", ":log"],
            _ => &[""],
        }
    }
}

/// One rule as the script computes it: its family and parameters, already checked to
/// be exact in doubles. Built by [`Scripted::parts`](super::Scripted::parts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub(super) family: Family,
    pub(super) algorithm: &'static str,
    pub(super) rule: Rule,
    pub(super) capacity: u64,
    params: Vec<String>,
}

impl Part {
    pub(super) fn new<A: Algorithm>(
        algorithm: &A,
        name: &'static str,
        family: Family,
        params: Vec<String>,
    ) -> Part {
        Part {
            family,
            algorithm: name,
            rule: *algorithm.rule(),
            capacity: algorithm.capacity(),
            params,
        }
    }

    /// `⌈W / max⌉`: the time one permit takes to come back.
    pub(super) fn interval(&self) -> Nanos {
        let (w, max) = (self.rule.window().as_u64(), self.rule.max_requests());
        Nanos::new(w.div_ceil(max))
    }

    /// What makes two parts share state: the algorithm and its rule.
    pub(super) fn descriptor(&self) -> String {
        let r = &self.rule;
        let (max, w, burst) = (r.max_requests(), r.window().as_u64(), r.burst());
        format!("{}/{max}/{w}/{burst}", self.algorithm)
    }
}

/// What a call does with the key's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Decide and write the new state, at the server's clock or the caller's instant.
    Decide(Option<Nanos>),
    /// Decide at the caller's instant and write nothing.
    Peek(Nanos),
    /// Write nothing, but delete the key when its state is idle at the caller's instant.
    Evict(Nanos),
}

/// The script's arguments after the keys: cost, instant, mode, detail, parts.
pub(super) fn arguments(parts: &[Part], cost: u64, mode: Mode, detail: bool) -> Vec<String> {
    // Above 2^53 a cost is inexact in Lua, but still above every capacity (< 2^53).
    let mut args = vec![cost.min(1 << 53).to_string()];
    let (at, mode) = match mode {
        Mode::Decide(None) => (None, "abs"),
        Mode::Decide(Some(at)) => (Some(at), CALLER_TTL_MODE),
        Mode::Peek(at) => (Some(at), "peek"),
        Mode::Evict(at) => (Some(at), "evict"),
    };
    match at {
        None => args.extend(["".into(), "".into()]),
        Some(at) => args.extend([
            (at.as_u64() / NANOS_PER_SEC).to_string(),
            (at.as_u64() % NANOS_PER_SEC).to_string(),
        ]),
    }
    args.push(mode.into());
    args.push(if detail { "1" } else { "0" }.into());
    for part in parts {
        args.push(part.family.name().into());
        args.extend(part.params.iter().cloned());
    }
    args
}

/// One part's answer: the wait for the cost asked (`Some(0)`: it passes; `None`:
/// never), and the part's state after the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PartReply {
    wait: Option<Nanos>,
    remaining: u64,
    reset_after: Nanos,
    /// The wait for a request of cost 1 after the decision (only when asked).
    status: Option<Option<Nanos>>,
}

/// Splits the script's reply into parts. Instants come as (s, ns) pairs and are turned
/// into waits from the instant asked in `u128`, saturating as the in-memory code does.
pub(super) fn decode(reply: &[i64], parts: usize, detail: bool) -> Vec<PartReply> {
    let pair = |s: i64, n: i64| u128::from(s as u64) * u128::from(NANOS_PER_SEC) + n as u128;
    let now = pair(reply[0], reply[1]);
    let until = |s: i64, n: i64| Nanos::saturating_from_u128(pair(s, n).saturating_sub(now));
    let wait = |passed: i64, s: i64, n: i64| match (passed, s) {
        (1, _) => Some(Nanos::ZERO),
        (_, -1) => None,
        _ => Some(until(s, n)),
    };
    let width = if detail { 9 } else { 6 };
    reply[2..]
        .chunks_exact(width)
        .take(parts)
        .map(|p| PartReply {
            wait: wait(p[0], p[1], p[2]),
            remaining: p[3] as u64,
            reset_after: until(p[4], p[5]),
            status: detail.then(|| wait(p[6], p[7], p[8])),
        })
        .collect()
}

/// The decision over all parts, as `Composite` and the limiter form it: allowed when
/// every part passes; the least remaining; the longest wait and reset.
pub(super) fn decision(replies: &[PartReply]) -> Decision {
    let allowed = replies.iter().all(|r| r.wait == Some(Nanos::ZERO));
    let retry_after = if allowed {
        Nanos::ZERO
    } else {
        replies
            .iter()
            .try_fold(Nanos::ZERO, |w, r| Some(w.max(r.wait?)))
            .unwrap_or(Nanos::MAX)
    };
    Decision {
        allowed,
        remaining: replies.iter().map(|r| r.remaining).min().unwrap_or(0),
        retry_after,
        reset_after: replies
            .iter()
            .map(|r| r.reset_after)
            .max()
            .unwrap_or_default(),
    }
}

/// [`decision`] plus which part denied and each part's view, as
/// [`RateLimiter::try_acquire_all`](crate::RateLimiter::try_acquire_all) reports them.
pub(super) fn composite_decision(replies: &[PartReply]) -> CompositeDecision {
    let decision = decision(replies);
    let per_rule = replies
        .iter()
        .map(|r| {
            let retry_after = r.status.flatten().unwrap_or(Nanos::MAX);
            Decision {
                allowed: retry_after == Nanos::ZERO,
                remaining: r.remaining,
                retry_after,
                reset_after: r.reset_after,
            }
        })
        .collect();
    CompositeDecision {
        denied_by: if decision.allowed {
            None
        } else {
            longest_wait(replies.iter().map(|r| r.wait))
        },
        decision,
        per_rule,
    }
}

/// [`decision`] and the part that denied (the longest wait, as [`composite_decision`]
/// names it), from a reply without per-part detail.
pub(super) fn decision_and_denier(replies: &[PartReply]) -> (Decision, Option<usize>) {
    let decision = decision(replies);
    let denied_by = if decision.allowed {
        None
    } else {
        longest_wait(replies.iter().map(|r| r.wait))
    };
    (decision, denied_by)
}

#[cfg(test)]
mod tests {
    use super::{FILES, SCRIPT_COMMANDS};

    /// The commands named by `redis.call('…'` in `text`, lower case.
    fn called(text: &str) -> Vec<String> {
        text.split("redis.call(")
            .skip(1)
            .filter_map(|rest| {
                let quote = rest.chars().next().filter(|c| matches!(c, '\'' | '"'))?;
                rest[1..].split(quote).next().map(str::to_ascii_lowercase)
            })
            .collect()
    }

    #[test]
    fn the_acl_list_is_exactly_the_commands_the_scripts_call() {
        let mut sources = vec![
            include_str!("lua/common.lua"),
            include_str!("lua/main.lua"),
            include_str!("lua/fast_bucket.lua"),
            include_str!("lua/fast_common.lua"),
            include_str!("lua/fast_window.lua"),
            include_str!("lua/fast_log.lua"),
        ];
        sources.extend(FILES);
        let mut found: Vec<String> = sources.iter().flat_map(|s| called(s)).collect();
        found.sort();
        found.dedup();
        assert_eq!(
            found, SCRIPT_COMMANDS,
            "update SCRIPT_COMMANDS and the ACL doc"
        );
        // Every call names its command literally: a computed name would escape the check.
        let calls: usize = sources
            .iter()
            .map(|s| s.matches("redis.call(").count())
            .sum();
        let literal: usize = sources.iter().map(|s| called(s).len()).sum();
        assert_eq!(calls, literal, "a redis.call with a computed command name");
    }

    #[test]
    fn the_caller_ttl_argument_is_the_documented_ttl() {
        let ms = super::CALLER_TTL.as_millis().to_string();
        assert_eq!(super::CALLER_TTL_MODE, format!("ttl{ms}"));
    }
}
