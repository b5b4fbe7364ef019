//! Redis down, slow, restarted, or guarded by a password: typed errors carrying the
//! limiter's failure-policy decision, automatic reconnect, never a panic, and never a
//! credential in an error.

mod redis_support;

use std::time::{Duration, Instant};

use ratesim::redis::{FailureKind, FailurePolicy, Now, RedisError, RedisStore};
use ratesim::{Nanos, Rule, TokenBucket};

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

    // A restart behind an idle pooled connection: the dead link is replaced at once.
    server.restart();
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
