//! Redis down, slow, restarted, or guarded by a password: typed errors carrying the
//! limiter's failure-policy decision, automatic reconnect, never a panic, and never a
//! credential in an error.

mod redis_support;

use std::time::{Duration, Instant};

use ratesim::redis::{FailureKind, FailurePolicy, Now, RedisError, RedisStore};
use ratesim::{Nanos, Rule, SlidingWindowLog, TokenBucket};

fn rule() -> Rule {
    Rule::new(3, Nanos::from_secs(3600)).unwrap() // 3 per hour: nothing refills mid-test
}

fn kind(e: &RedisError) -> FailureKind {
    match e {
        RedisError::Unavailable { error, .. } => error.kind(),
        other => panic!("expected Unavailable, got {other}"),
    }
}

#[test]
fn a_killed_server_fails_by_policy_and_a_restarted_one_is_reconnected() {
    let Some(mut server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "fail").unwrap();
    let base = store.limiter(TokenBucket::new(rule())).unwrap();
    let closed = base.clone().with_timeout(Duration::from_millis(300));
    let open = base.with_policy(FailurePolicy::Open);
    assert!(closed.try_acquire("k", Now::Server).unwrap().allowed);

    server.kill();
    for (limiter, policy) in [
        (&closed, FailurePolicy::Closed),
        (&open, FailurePolicy::Open),
    ] {
        let started = Instant::now();
        let e = limiter.try_acquire("k", Now::Server).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(kind(&e), FailureKind::Connection, "{e}");
        let fallback = e.fallback().unwrap();
        assert_eq!(fallback.allowed, policy == FailurePolicy::Open, "{e}");
        if policy == FailurePolicy::Closed {
            assert_eq!(
                fallback.retry_after,
                Nanos::from_secs(1200),
                "one permit's time"
            );
            assert!(
                e.to_string()
                    .contains("failing closed: the request is denied"),
                "{e}"
            );
        }
    }

    server.restart(); // same socket, empty (no persistence): a fresh bucket
    let d = closed.try_acquire("k", Now::Server).expect("reconnected");
    assert_eq!((d.allowed, d.remaining), (true, 2));
    let d = open.try_acquire("k", Now::Server).unwrap();
    assert_eq!(
        (d.allowed, d.remaining),
        (true, 1),
        "both limiters share one state"
    );

    // A restart behind an idle pooled connection: the call on the dead link is not
    // resent (it may have run before the link broke), so it fails by policy; the next
    // call gets a fresh link.
    server.restart();
    let e = closed.try_acquire("k", Now::Server).unwrap_err();
    assert_eq!(kind(&e), FailureKind::Connection, "{e}");
    let d = closed
        .try_acquire("k", Now::Server)
        .expect("the stale link replaced");
    assert_eq!((d.allowed, d.remaining), (true, 2));
}

#[test]
fn a_server_that_stops_answering_times_out_and_the_decision_is_never_resent() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let store = RedisStore::open(&server.url(), "slow").unwrap();
    let limiter = store
        .limiter(TokenBucket::new(rule()))
        .unwrap()
        .with_timeout(Duration::from_millis(150));
    assert!(limiter.try_acquire("k", Now::Server).unwrap().allowed);

    server.pause();
    let started = Instant::now();
    let e = limiter.try_acquire("k", Now::Server).unwrap_err();
    let waited = started.elapsed();
    server.resume();
    assert_eq!(kind(&e), FailureKind::Timeout, "{e}");
    assert!(!e.fallback().unwrap().allowed, "closed by default");
    assert!(
        waited >= Duration::from_millis(140) && waited < Duration::from_secs(2),
        "{waited:?}"
    );

    // The timed-out request may have run once the server woke up, but only once: the
    // client dropped that connection and never resent it.
    let d = limiter
        .try_acquire("k", Now::Server)
        .expect("a new connection");
    assert!(d.allowed);
    assert!(d.remaining <= 1, "{d:?}");
    assert!(d.remaining == 0 || d.remaining == 1);
}

#[test]
fn a_wrong_password_is_a_typed_error_that_never_shows_a_password() {
    let right = "c0rrect-h0rse-PW";
    let wrong = "wr0ng-b4ttery-PW";
    let Some(server) = redis_support::Server::start(&["--requirepass", right]) else {
        return;
    };
    let shows_no_secret = |text: &str| {
        assert!(
            !text.contains(right) && !text.contains(wrong),
            "leaked: {text}"
        );
    };

    let e = RedisStore::open(&server.url_with(&format!("?pass={wrong}")), "auth").unwrap_err();
    assert_eq!(e.kind(), FailureKind::Auth, "{e}");
    assert!(e.to_string().contains("authentication failed"), "{e}");
    shows_no_secret(&e.to_string());
    shows_no_secret(&format!("{e:?}"));

    let e = RedisStore::open(&server.url(), "auth").unwrap_err();
    assert_eq!(e.kind(), FailureKind::Auth, "no password: NOAUTH, {e}");
    shows_no_secret(&format!("{e} {e:?}"));

    let store = RedisStore::open(&server.url_with(&format!("?pass={right}")), "auth").unwrap();
    shows_no_secret(&format!("{store:?}"));
    let limiter = store.limiter(TokenBucket::new(rule())).unwrap();
    shows_no_secret(&format!("{limiter:?}"));
    assert!(limiter.try_acquire("k", Now::Server).unwrap().allowed);

    // Over TCP the password sits in the URL's authority; the same holds.
    let e = RedisStore::open(&format!("redis://:{wrong}@127.0.0.1:1"), "auth").unwrap_err();
    shows_no_secret(&format!("{e} {e:?}"));
}

/// The commands the store needs (docs/redis-design.md §9): its own and the scripts',
/// as the library lists them (a unit test checks the list against the Lua sources).
fn needed() -> Vec<&'static str> {
    let mut all: Vec<&str> = ratesim::redis::CLIENT_COMMANDS.to_vec();
    all.extend(ratesim::redis::SCRIPT_COMMANDS);
    all.sort_unstable();
    all.dedup();
    all
}

/// Every command the store sends, on fresh keys (`run` makes them unique): opening
/// (PING), a flushed script cache (SCRIPT LOAD), server time with an idle key (TIME,
/// GET, DEL) and a kept one (SET … PXAT, the log list's PEXPIREAT), and a sliding log on
/// caller instants that appends, merges, is denied and expires (RPUSH, LSET, LRANGE,
/// LINDEX, LPOP).
fn workload(
    url: &str,
    prefix: &str,
    admin: &mut redis::Connection,
    run: u32,
) -> Result<(), FailureKind> {
    let kind = |e: RedisError| match e {
        RedisError::Unavailable { error, .. } => error.kind(),
        other => panic!("{other}"),
    };
    let store = RedisStore::open(url, prefix).map_err(|e| e.kind())?;
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(admin).unwrap();
    let key = format!("k{run}");
    let bucket = store.limiter(TokenBucket::new(rule())).unwrap();
    bucket.try_acquire_n(&key, 0, Now::Server).map_err(kind)?;
    let log = store
        .limiter(SlidingWindowLog::new(
            Rule::new(3, Nanos::new(1_000)).unwrap(),
        ))
        .unwrap();
    log.try_acquire(&key, Now::Server).map_err(kind)?;
    for at in [0, 0, 5, 10, 1_000, 2_000] {
        log.try_acquire(&key, Now::Caller(Nanos::new(at)))
            .map_err(kind)?;
    }
    // Peeks that skip expired entries without trimming them (LLEN), and an eviction.
    for at in [1_004, 2_500, 3_500] {
        log.peek_n(&key, 1, Nanos::new(at)).map_err(kind)?;
    }
    log.evict_idle(&[key.as_str()], Nanos::new(1 << 40))
        .map_err(kind)?;
    // Every algorithm on both clocks, peeked and evicted, and a composite of all six.
    let every_rule = Rule::new(2, Nanos::new(1_000)).unwrap();
    let mut all = Vec::new();
    for name in redis_support::ALGORITHMS {
        let limiter = redis_support::limiter(&store, name, every_rule);
        limiter.try_acquire(&key, Now::Server).map_err(kind)?;
        for at in [0, 1, 2, 700, 1_500] {
            limiter
                .try_acquire(&key, Now::Caller(Nanos::new(at)))
                .map_err(kind)?;
            limiter.peek_n(&key, 1, Nanos::new(at + 1)).map_err(kind)?;
        }
        limiter
            .evict_idle(&[key.as_str()], Nanos::new(1 << 40))
            .map_err(kind)?;
        all.push(limiter);
    }
    let composite = store.composite(all).unwrap();
    for at in [0, 1, 2, 1_500] {
        composite
            .try_acquire_all(&key, 1, Now::Caller(Nanos::new(at)))
            .map_err(kind)?;
        composite
            .peek_n(&key, 1, Nanos::new(at + 1))
            .map_err(kind)?;
    }
    composite
        .try_acquire_all(&key, 1, Now::Server)
        .map_err(kind)?;
    composite
        .evict_idle(&[key.as_str()], Nanos::new(1 << 40))
        .map_err(kind)?;
    Ok(())
}

#[test]
fn an_acl_user_with_only_the_documented_commands_and_prefix_can_decide_and_no_less() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let mut admin = server.connection("");
    let grant: Vec<String> = needed().iter().map(|c| format!("+{c}")).collect();
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "limiter",
            "on",
            ">s3cret",
            "resetchannels",
            "~acl:*",
            "-@all",
        ])
        .arg(&grant)
        .query(&mut admin)
        .unwrap();
    let url = server.url_with("?user=limiter&pass=s3cret");
    let mut run = 0;
    let mut next = || {
        run += 1;
        run
    };
    assert_eq!(
        workload(&url, "acl", &mut admin, next()),
        Ok(()),
        "the documented list suffices"
    );
    assert_eq!(
        workload(&url, "other", &mut admin, next()),
        Err(FailureKind::Auth),
        "keys outside the prefix are refused"
    );
    for command in needed() {
        let set = |sign: char, con: &mut redis::Connection| {
            let _: () = redis::cmd("ACL")
                .arg(&["SETUSER", "limiter", &format!("{sign}{command}")])
                .query(con)
                .unwrap();
        };
        set('-', &mut admin);
        assert_eq!(
            workload(&url, "acl", &mut admin, next()),
            Err(FailureKind::Auth),
            "without {command} the store must fail, typed"
        );
        set('+', &mut admin);
    }
    assert_eq!(workload(&url, "acl", &mut admin, next()), Ok(()));
}

/// A `FLUSHALL` (or a restart without persistence) empties every key: a state that is
/// gone looks like a fresh one. The store notices through its marker key: an
/// application's store counts the loss and decides on the fresh state (the call that
/// found it wrote nothing, so sending it again charges once); a store that stops at
/// its first failure (the simulator's) fails with `StateLost` and stays stopped.
#[test]
fn a_flushed_server_is_noticed_counted_and_decided_fresh_or_stops_the_store() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let mut admin = server.connection("");
    let store = RedisStore::open(&server.url(), "lost").unwrap();
    let stopping = RedisStore::builder("lost-run")
        .server(&server.url())
        .stop_after_failure()
        .open()
        .unwrap();
    let limiter = store.limiter(TokenBucket::new(rule())).unwrap();
    let strict = stopping.limiter(TokenBucket::new(rule())).unwrap();
    for _ in 0..3 {
        assert!(limiter.try_acquire("k", Now::Server).unwrap().allowed);
        assert!(strict.try_acquire("k", Now::Server).unwrap().allowed);
    }
    assert!(!limiter.try_acquire("k", Now::Server).unwrap().allowed);
    assert_eq!(store.state_losses(), 0);

    let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
    // The application's store: the loss is counted once, the bucket is full again
    // (3 per hour, one taken now), and the marker is back.
    let d = limiter.try_acquire("k", Now::Server).unwrap();
    assert!(d.allowed && d.remaining == 2, "{d:?}");
    assert_eq!(store.state_losses(), 1);
    assert!(limiter.try_acquire("k", Now::Server).unwrap().allowed);
    assert_eq!(store.state_losses(), 1, "counted once per loss");
    let markers: Vec<String> = redis::cmd("KEYS")
        .arg("lost:marker:*")
        .query(&mut admin)
        .unwrap();
    assert_eq!(markers.len(), 1, "{markers:?}");

    // The stopping store: a typed error, nothing written, and every later call fails.
    for now in [Now::Server, Now::Caller(Nanos::new(5))] {
        let e = strict.try_acquire("k", now).unwrap_err();
        assert_eq!(kind(&e), FailureKind::StateLost, "{e}");
        assert!(e.to_string().contains("FLUSHALL"), "{e}");
    }
    assert_eq!(stopping.state_losses(), 0);
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("lost-run:*")
        .query(&mut admin)
        .unwrap();
    assert!(left.is_empty(), "a stopped store wrote {left:?}");
}
