//! The limit a policy enforces ([`Rule`]) and the answer it gives ([`Decision`]).
//!
//! Both are plain values: a `Rule` is validated once, on construction, so no algorithm
//! ever sees a zero window or a zero capacity. Nothing here reads a clock.

use crate::time::Nanos;

/// "`max_requests` per `window`", plus the bucket capacity `burst`.
///
/// For the window algorithms `max_requests` is the quota of each window. For the
/// buckets (and GCRA) `burst` is the capacity and `max_requests / window` the sustained
/// refill or leak rate; `burst` defaults to `max_requests`, which is the seed's
/// behaviour.
///
/// ```
/// use ratesim::{Nanos, Rule};
/// let rule = Rule::new(5, Nanos::from_secs(10))?.with_burst(8)?;
/// assert_eq!((rule.max_requests(), rule.burst()), (5, 8));
/// assert!(Rule::new(0, Nanos::from_secs(1)).is_err());
/// # Ok::<(), ratesim::RuleError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    max_requests: u64,
    window: Nanos,
    burst: u64,
}

/// Why a [`Rule`] could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// `max_requests` was 0: nothing could ever pass.
    #[error("max_requests must be at least 1")]
    ZeroMaxRequests,
    /// `window` was 0 ns: the rate would be infinite.
    #[error("window must be at least 1 ns")]
    ZeroWindow,
    /// `burst` was 0: the bucket could never hold a token.
    #[error("burst must be at least 1")]
    ZeroBurst,
}

impl Rule {
    /// `max_requests` per `window`, with `burst = max_requests`.
    pub fn new(max_requests: u64, window: Nanos) -> Result<Rule, RuleError> {
        if max_requests == 0 {
            return Err(RuleError::ZeroMaxRequests);
        }
        if window == Nanos::ZERO {
            return Err(RuleError::ZeroWindow);
        }
        Ok(Rule {
            max_requests,
            window,
            burst: max_requests,
        })
    }

    /// The same rule with a bucket capacity of `burst`.
    pub fn with_burst(self, burst: u64) -> Result<Rule, RuleError> {
        if burst == 0 {
            return Err(RuleError::ZeroBurst);
        }
        Ok(Rule { burst, ..self })
    }

    /// Requests allowed per window.
    pub fn max_requests(&self) -> u64 {
        self.max_requests
    }

    /// The window length.
    pub fn window(&self) -> Nanos {
        self.window
    }

    /// The bucket capacity (defaults to `max_requests`).
    pub fn burst(&self) -> u64 {
        self.burst
    }

    /// Requests per second, for display only.
    pub fn rate_per_sec(&self) -> f64 {
        self.max_requests as f64 / self.window.as_secs_f64()
    }
}

impl Rule {
    /// This rule as an item of the IETF `RateLimit-Policy` field
    /// (draft-ietf-httpapi-ratelimit-headers): `"name";q=<max_requests>;w=<window s>`.
    /// The window is rounded up to whole seconds, as the field requires an integer.
    ///
    /// ```
    /// # use ratesim::{Nanos, Rule};
    /// let rule = Rule::new(100, Nanos::from_secs(60))?;
    /// assert_eq!(rule.ratelimit_policy("per-minute"), r#""per-minute";q=100;w=60"#);
    /// # Ok::<(), ratesim::RuleError>(())
    /// ```
    pub fn ratelimit_policy(&self, name: &str) -> String {
        let mut out = String::new();
        self.write_ratelimit_policy(name, &mut out);
        out
    }

    /// [`ratelimit_policy`](Rule::ratelimit_policy) appended to `out`: no allocation
    /// when `out` has room (an HTTP layer's per-request path).
    pub fn write_ratelimit_policy(&self, name: &str, out: &mut String) {
        push_sf_string(name, out);
        out.push_str(";q=");
        push_decimal(self.max_requests, out);
        out.push_str(";w=");
        push_decimal(ceil_secs(self.window).max(1), out);
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.max_requests, self.window)?;
        if self.burst != self.max_requests {
            write!(f, " (burst {})", self.burst)?;
        }
        Ok(())
    }
}

/// What the HTTP layer needs to answer 200 or 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request was admitted (and its cost consumed).
    pub allowed: bool,
    /// Requests of cost 1 that would pass right now, after this one
    /// (`X-RateLimit-Remaining`).
    pub remaining: u64,
    /// The least wait after which this request would pass, if nothing else happens in
    /// between; zero when allowed (`Retry-After`).
    pub retry_after: Nanos,
    /// The wait until the key is back to its full quota.
    pub reset_after: Nanos,
}

/// The decision for an endpoint with no rule: always allowed, unlimited remaining.
pub const UNLIMITED: Decision = Decision {
    allowed: true,
    remaining: u64::MAX,
    retry_after: Nanos::ZERO,
    reset_after: Nanos::ZERO,
};

impl Decision {
    /// `Retry-After` in whole seconds, rounded up: a client that waits this long is
    /// never early. Zero only when the request was allowed; a denial always says at
    /// least 1 (a `Retry-After: 0` invites an immediate, wasted retry).
    pub fn retry_after_secs(&self) -> u64 {
        if self.allowed {
            return 0;
        }
        ceil_secs(self.retry_after).max(1)
    }

    /// Seconds until the quota is full again, rounded up.
    pub fn reset_after_secs(&self) -> u64 {
        ceil_secs(self.reset_after)
    }

    /// This decision as an item of the IETF `RateLimit` field for the policy `name`:
    /// `"name";r=<remaining>;t=<seconds until the quota is full again>`.
    ///
    /// ```
    /// # use ratesim::{Decision, Nanos};
    /// let d = Decision { allowed: true, remaining: 4, retry_after: Nanos::ZERO, reset_after: Nanos::from_millis(2_500) };
    /// assert_eq!(d.ratelimit("default"), r#""default";r=4;t=3"#);
    /// ```
    pub fn ratelimit(&self, name: &str) -> String {
        let mut out = String::new();
        self.write_ratelimit(name, &mut out);
        out
    }

    /// [`ratelimit`](Decision::ratelimit) appended to `out`: no allocation when `out`
    /// has room (an HTTP layer's per-request path).
    pub fn write_ratelimit(&self, name: &str, out: &mut String) {
        push_sf_string(name, out);
        out.push_str(";r=");
        push_decimal(self.remaining, out);
        out.push_str(";t=");
        push_decimal(self.reset_after_secs(), out);
    }
}

/// Appends `text` as a structured-field String (RFC 8941 §3.3.3): quoted, with `"` and `\`
/// escaped and anything outside printable ASCII replaced, since the format allows
/// nothing else.
fn push_sf_string(text: &str, out: &mut String) {
    out.reserve(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out.push('"');
}

/// Appends `n` in decimal. The header fields are written on every request; this is a
/// multiplication or two per pair of digits where `write!` goes through `core::fmt`'s
/// padding machinery (measured at about a tenth of the tower layer's own cost).
fn push_decimal(mut n: u64, out: &mut String) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut digits = [0u8; 20]; // u64::MAX has 20 digits
    let mut start = digits.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        start -= 1;
        digits[start] = b'0' + n as u8;
    }
    out.extend(digits[start..].iter().map(|&d| char::from(d)));
}

fn ceil_secs(n: Nanos) -> u64 {
    n.as_u64().div_ceil(crate::time::NANOS_PER_SEC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_display_rate_is_requests_per_second() {
        let per_sec = |max, secs| {
            Rule::new(max, Nanos::from_secs(secs))
                .unwrap()
                .rate_per_sec()
        };
        assert_eq!(per_sec(100, 10), 10.0);
        assert_eq!(per_sec(3, 2), 1.5);
        assert_eq!(per_sec(1, 4), 0.25);
    }

    #[test]
    fn rules_reject_zero_limits_window_and_burst() {
        assert_eq!(
            Rule::new(0, Nanos::from_secs(1)),
            Err(RuleError::ZeroMaxRequests)
        );
        assert_eq!(Rule::new(1, Nanos::ZERO), Err(RuleError::ZeroWindow));
        let rule = Rule::new(1, Nanos::new(1)).unwrap();
        assert_eq!(rule.with_burst(0), Err(RuleError::ZeroBurst));
        assert_eq!(rule.burst(), 1, "burst defaults to max_requests");
    }

    #[test]
    fn huge_rules_are_representable() {
        let rule = Rule::new(u64::MAX, Nanos::MAX)
            .unwrap()
            .with_burst(u64::MAX)
            .unwrap();
        assert_eq!(rule.max_requests(), u64::MAX);
        assert!(rule.rate_per_sec() > 0.0);
    }

    #[test]
    fn rules_display_as_the_limit_flag_writes_them() {
        let rule = |max, ns| Rule::new(max, Nanos::new(ns)).unwrap();
        assert_eq!(rule(5, 1).to_string(), "5/1ns");
        assert_eq!(rule(100, 60_000_000_000).to_string(), "100/1m");
        assert_eq!(
            rule(10, 250_000_000).with_burst(4).unwrap().to_string(),
            "10/250ms (burst 4)"
        );
    }

    #[test]
    fn header_names_are_escaped_as_structured_field_strings() {
        let rule = Rule::new(3, Nanos::new(1)).unwrap();
        assert_eq!(rule.ratelimit_policy(r#"a"b\c"#), r#""a\"b\\c";q=3;w=1"#);
        assert_eq!(rule.ratelimit_policy("é"), r#""?";q=3;w=1"#);
    }

    #[test]
    fn decimals_are_written_as_display_writes_them() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            101,
            1_000,
            12_345,
            1_000_000_007,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = String::from("x");
            push_decimal(n, &mut out);
            assert_eq!(out, format!("x{n}"));
        }
    }

    #[test]
    fn retry_after_header_rounds_up_and_is_never_zero_on_denial() {
        let denied = |ns| Decision {
            allowed: false,
            remaining: 0,
            retry_after: Nanos::new(ns),
            reset_after: Nanos::new(ns),
        };
        assert_eq!(denied(1).retry_after_secs(), 1);
        assert_eq!(denied(1_000_000_000).retry_after_secs(), 1);
        assert_eq!(denied(1_000_000_001).retry_after_secs(), 2);
        assert_eq!(denied(0).retry_after_secs(), 1);
        assert_eq!(UNLIMITED.retry_after_secs(), 0);
    }
}
