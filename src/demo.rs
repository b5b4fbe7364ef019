//! The seed's deterministic demo, reproduced byte for byte (`ratesim demo`).
//!
//! Floats appear here only to format times for people; every decision is integer.

use std::fmt::Write;

use crate::algorithm::Algorithm;
use crate::limiter::RateLimiter;
use crate::middleware::Middleware;
use crate::registry::Registry;
use crate::rule::Rule;
use crate::time::{FakeClock, Nanos};

/// The five algorithms of the seed's demo, in its order.
const DEMO_ALGORITHMS: [&str; 5] = [
    "token_bucket",
    "leaky_bucket",
    "fixed_window",
    "sliding_window_log",
    "sliding_window_counter",
];

/// The demo's full text: 5 requests / 10 s on every algorithm, then the middleware.
pub fn demo_text() -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_demo(&mut out);
    out
}

fn write_demo(out: &mut String) -> std::fmt::Result {
    let registry = Registry::default();
    let rule = Rule::new(5, Nanos::from_secs(10)).expect("5 per 10 s is a valid rule");
    for name in DEMO_ALGORITHMS {
        let clock = FakeClock::new(Nanos::ZERO);
        let algorithm = registry.create(name, rule).expect("built-in algorithm");
        let limiter: RateLimiter<_, String, _> = RateLimiter::with_clock(algorithm, clock.clone());
        writeln!(out, "\n{}: 5 requests / 10 s", limiter.algorithm().name())?;
        for i in 0..7 {
            let d = limiter.try_acquire("user_1");
            let status = if d.allowed {
                "allowed".to_string()
            } else {
                format!("denied  retry_after={:.2}s", d.retry_after.as_secs_f64())
            };
            let t = secs(&clock);
            writeln!(
                out,
                "  t={t:4.1}s req {}: {status:<28} remaining={}",
                i + 1,
                d.remaining
            )?;
            clock.advance(Nanos::from_millis(500));
        }
        clock.advance(Nanos::from_secs(4));
        let d = limiter.try_acquire("user_1");
        let verdict = if d.allowed { "allowed" } else { "denied" };
        writeln!(
            out,
            "  t={:4.1}s after a 4 s pause: {verdict}, remaining={}",
            secs(&clock),
            d.remaining
        )?;
        clock.advance(Nanos::from_secs(30));
        writeln!(
            out,
            "  idle keys evicted after 30 s quiet: {}",
            limiter.evict_idle()
        )?;
    }

    writeln!(
        out,
        "\nMiddleware: /login 3 per 60 s (sliding log), /search unlimited"
    )?;
    let mw = Middleware::with_clock(FakeClock::new(Nanos::ZERO));
    let login = Rule::new(3, Nanos::from_secs(60)).expect("3 per 60 s is a valid rule");
    mw.add_rule("/login", login, "sliding_window_log")
        .expect("built-in algorithm");
    for i in 0..4 {
        let d = mw.check("/login", "alice");
        let answer = if d.allowed {
            "200".to_string()
        } else {
            format!("429 Retry-After: {}", d.retry_after_secs())
        };
        writeln!(out, "  login {}: {answer}", i + 1)?;
    }
    let search = if mw.check("/search", "alice").allowed {
        "200"
    } else {
        "429"
    };
    writeln!(out, "  /search: {search}")
}

fn secs(clock: &FakeClock) -> f64 {
    use crate::time::Clock;
    clock.now().as_secs_f64()
}
