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

use std::cell::RefCell;
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
    /// The decisions of `Middleware::check_n_with_headers`, with the header fields
    /// written straight into reused buffers (the per-request path: no allocation but
    /// the two field values and the list holding them).
    fn check<E: AsRef<str>>(&self, endpoints: &[E], client: &str, cost: u64) -> Checked {
        Checked::Now(with_fields(|mut fields| {
            for endpoint in endpoints {
                let endpoint = endpoint.as_ref();
                let Some(limit) = self.limit(endpoint) else {
                    continue; // unlimited: no fields, admitted
                };
                let decision = Self::acquire_n(&limit.limiter, endpoint, client, cost);
                limit
                    .spec
                    .rule
                    .write_ratelimit_policy(endpoint, fields.next_policy());
                decision.write_ratelimit(endpoint, fields.next_ratelimit());
                if !decision.allowed {
                    let never = decision.retry_after == Nanos::MAX;
                    let retry = (!never).then(|| HeaderValue::from(decision.retry_after_secs()));
                    return fields.denied(endpoint, never, retry);
                }
            }
            fields.allowed()
        }))
    }
}

/// One verdict from the endpoints' decisions, taken lazily so that the first denial
/// stops the checking.
pub fn join<'a>(decisions: impl Iterator<Item = (&'a str, HttpDecision)>) -> Verdict {
    with_fields(|mut fields| {
        for (endpoint, decision) in decisions {
            let mut retry = None;
            for (name, value) in &decision.headers {
                match *name {
                    "RateLimit-Policy" => fields.next_policy().push_str(value),
                    "RateLimit" => fields.next_ratelimit().push_str(value),
                    "Retry-After" => retry = HeaderValue::try_from(value.as_str()).ok(),
                    _ => {}
                }
            }
            if !decision.decision.allowed {
                let never = decision.decision.retry_after == Nanos::MAX;
                return fields.denied(endpoint, never, retry.filter(|_| !never));
            }
        }
        fields.allowed()
    })
}

const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// The `RateLimit-Policy` and `RateLimit` lists of a verdict being built, one item per
/// limited endpoint.
struct Fields<'a> {
    policy: &'a mut String,
    ratelimit: &'a mut String,
}

impl Fields<'_> {
    /// The policy list, ready for one more item.
    fn next_policy(&mut self) -> &mut String {
        separate(self.policy)
    }

    /// The `RateLimit` list, ready for one more item.
    fn next_ratelimit(&mut self) -> &mut String {
        separate(self.ratelimit)
    }

    fn allowed(self) -> Verdict {
        Verdict {
            allowed: true,
            never: false,
            denied_by: None,
            headers: self.headers(None),
        }
    }

    /// Denied by `endpoint` (`never`: no wait helps), with `Retry-After` = `retry`.
    fn denied(self, endpoint: &str, never: bool, retry: Option<HeaderValue>) -> Verdict {
        Verdict {
            allowed: false,
            never,
            denied_by: Some(endpoint.to_string()),
            headers: self.headers(retry),
        }
    }

    /// The fields, leaving out an empty list (no limited endpoint) and, as a bug guard,
    /// a value that is not a valid field value (the library's structured-field strings
    /// are printable ASCII).
    fn headers(self, retry: Option<HeaderValue>) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers = Vec::with_capacity(3);
        for (name, list) in [(POLICY, &self.policy), (RATELIMIT, &self.ratelimit)] {
            if let Some(Ok(value)) = (!list.is_empty()).then(|| HeaderValue::from_str(list)) {
                headers.push((name, value));
            }
        }
        if let Some(retry) = retry {
            headers.push((http::header::RETRY_AFTER, retry));
        }
        headers
    }
}

fn separate(list: &mut String) -> &mut String {
    if !list.is_empty() {
        list.push_str(", ");
    }
    list
}

/// Runs `f` on empty lists kept by this thread, so building a verdict allocates only
/// the field values themselves.
fn with_fields<R>(f: impl FnOnce(Fields<'_>) -> R) -> R {
    thread_local! {
        static LISTS: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
    }
    LISTS.with(|lists| match lists.try_borrow_mut() {
        Ok(mut lists) => {
            let (policy, ratelimit) = &mut *lists;
            policy.clear();
            ratelimit.clear();
            f(Fields { policy, ratelimit })
        }
        // Re-entered (an iterator given to `join` that builds a verdict itself).
        Err(_) => f(Fields {
            policy: &mut String::new(),
            ratelimit: &mut String::new(),
        }),
    })
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
