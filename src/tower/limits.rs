//! The store side of the layer: the one seam an async backend plugs into.
//!
//! [`Limits`] answers "may `client` pass the endpoints of this route?" with a
//! [`Verdict`], either at once ([`Checked::Now`], the in-memory [`Middleware`]: a short
//! critical section per key, no I/O, no await) or later ([`Checked::Later`], a future:
//! how the async Redis store `RedisLimits` answers, one round trip per endpoint on the
//! tokio connection manager, with its fail-open/closed policy and timeout inside the
//! future). Another backend is one more `impl Limits`; `RateLimitLayer<ThatBackend>`
//! works the same.
//!
//! Every decision and header value comes from [`Middleware::check_with_headers`], the
//! path the simulator drives; this module only joins a route's endpoints.

use std::future::Future;
use std::pin::Pin;

use http::header::{HeaderName, HeaderValue};

use crate::middleware::{HttpDecision, Middleware};
use crate::store::InMemory;
use crate::time::{Clock, Nanos};

/// The answer for one request across its route's endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Every limited endpoint admitted the request.
    pub allowed: bool,
    /// Denied, and waiting cannot help (the cost exceeds the burst): no `Retry-After`.
    pub never: bool,
    /// The endpoint (policy) that denied, if one did.
    pub denied_by: Option<String>,
    /// `RateLimit-Policy` and `RateLimit` (one item per limited endpoint, in route
    /// order), plus `Retry-After` on a denial that a wait can cure.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// A verdict now, or a future one.
pub enum Checked {
    /// Decided without waiting (in memory).
    Now(Verdict),
    /// Decided by I/O (a remote store); the layer awaits it before calling the service.
    Later(Pin<Box<dyn Future<Output = Verdict> + Send>>),
}

/// Decides requests for the layer.
pub trait Limits: Send + Sync + 'static {
    /// The verdict for a request of `cost` permits by `client` on `endpoints` (in order;
    /// an endpoint without a rule is unlimited). The first denial ends the check: later
    /// endpoints are not consumed (earlier ones are: see the module doc of
    /// `ratesim::tower`).
    fn check<E: AsRef<str>>(&self, endpoints: &[E], client: &str, cost: u64) -> Checked;
}

impl<C: Clock + Clone + Send + Sync + 'static> Limits for Middleware<InMemory<C>> {
    fn check<E: AsRef<str>>(&self, endpoints: &[E], client: &str, cost: u64) -> Checked {
        Checked::Now(join(endpoints.iter().map(|endpoint| {
            let endpoint = endpoint.as_ref();
            let decision = if cost == 1 {
                self.check_with_headers(endpoint, client)
            } else {
                self.check_n_with_headers(endpoint, client, cost)
            };
            (endpoint, decision)
        })))
    }
}

/// One verdict from the endpoints' decisions, taken lazily so that the first denial
/// stops the checking.
pub fn join<'a>(decisions: impl Iterator<Item = (&'a str, HttpDecision)>) -> Verdict {
    let mut policy = String::new();
    let mut ratelimit = String::new();
    let mut verdict = Verdict {
        allowed: true,
        never: false,
        denied_by: None,
        headers: Vec::with_capacity(3),
    };
    let mut retry_after = None;
    for (endpoint, decision) in decisions {
        for (name, value) in decision.headers {
            match name {
                "RateLimit-Policy" => append_item(&mut policy, &value),
                "RateLimit" => append_item(&mut ratelimit, &value),
                "Retry-After" => retry_after = Some(value),
                _ => {}
            }
        }
        if !decision.decision.allowed {
            verdict.allowed = false;
            verdict.never = decision.decision.retry_after == Nanos::MAX;
            verdict.denied_by = Some(endpoint.to_string());
            break;
        }
    }
    push(&mut verdict.headers, "ratelimit-policy", policy);
    push(&mut verdict.headers, "ratelimit", ratelimit);
    if !verdict.allowed && !verdict.never {
        push(
            &mut verdict.headers,
            "retry-after",
            retry_after.unwrap_or_default(),
        );
    }
    verdict
}

fn append_item(list: &mut String, item: &str) {
    if !list.is_empty() {
        list.push_str(", ");
    }
    list.push_str(item);
}

/// Adds a header unless `value` is empty or not a valid field value (the library's
/// structured-field strings are printable ASCII, so that is a bug guard, not a path).
fn push(headers: &mut Vec<(HeaderName, HeaderValue)>, name: &'static str, value: String) {
    if value.is_empty() {
        return;
    }
    if let Ok(value) = HeaderValue::try_from(value) {
        headers.push((HeaderName::from_static(name), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Decision, FakeClock, Rule};

    fn decision(allowed: bool, retry_after: Nanos) -> Decision {
        Decision {
            allowed,
            remaining: 0,
            retry_after,
            reset_after: Nanos::from_secs(2),
        }
    }

    fn http(d: Decision, name: &str) -> HttpDecision {
        let mut headers = vec![
            ("RateLimit-Policy", format!("\"{name}\";q=1;w=2")),
            ("RateLimit", d.ratelimit(name)),
        ];
        if !d.allowed {
            headers.push(("Retry-After", d.retry_after_secs().to_string()));
        }
        HttpDecision {
            decision: d,
            headers,
        }
    }

    #[test]
    fn a_cure_less_denial_has_no_retry_after() {
        let v = join([("a", http(decision(false, Nanos::MAX), "a"))].into_iter());
        assert!(v.never && !v.allowed);
        assert!(v.headers.iter().all(|(n, _)| n != "retry-after"));
        let v = join([("a", http(decision(false, Nanos::from_millis(1)), "a"))].into_iter());
        let retry: Vec<_> = v
            .headers
            .iter()
            .filter(|(n, _)| n == "retry-after")
            .collect();
        assert_eq!(retry.len(), 1);
        assert_eq!(retry[0].1, "1");
    }

    #[test]
    fn the_first_denial_stops_the_check() {
        let mw = Middleware::with_clock(FakeClock::default());
        mw.add_rule(
            "a",
            Rule::new(1, Nanos::from_secs(10)).unwrap(),
            "token_bucket",
        )
        .unwrap();
        mw.add_rule(
            "b",
            Rule::new(5, Nanos::from_secs(10)).unwrap(),
            "token_bucket",
        )
        .unwrap();
        let verdict =
            |mw: &Middleware<InMemory<FakeClock>>| match Limits::check(mw, &["a", "b"], "c", 1) {
                Checked::Now(v) => v,
                Checked::Later(_) => unreachable!("memory decides now"),
            };
        assert!(verdict(&mw).allowed);
        let denied = verdict(&mw);
        assert_eq!(denied.denied_by.as_deref(), Some("a"));
        // b was consumed once only: 4 of 5 left.
        assert_eq!(mw.check_with_headers("b", "c").decision.remaining, 3);
    }
}
