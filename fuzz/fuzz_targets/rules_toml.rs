//! Arbitrary text → `Middleware::reload_str`: must never panic. On success every
//! listed endpoint must answer a check; on error the previous rules must stay.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ratesim::{FakeClock, Middleware, Nanos, Rule};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mw = Middleware::with_clock(FakeClock::new(Nanos::ZERO));
    let before = Rule::new(1, Nanos::from_secs(1)).expect("a valid rule");
    mw.add_rule("/fuzz-sentinel", before, "token_bucket")
        .expect("a built-in algorithm");
    match mw.reload_str(text, "rules.toml") {
        Ok(()) => {
            for (endpoint, _) in mw.rules() {
                let d = mw.check_with_headers(&endpoint, "client");
                let _ = d.status();
            }
        }
        Err(e) => {
            let _ = e.to_string();
            assert_eq!(
                mw.rule("/fuzz-sentinel").map(|r| r.rule),
                Some(before),
                "a failed reload changed the rules"
            );
        }
    }
});
