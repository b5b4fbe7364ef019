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
    pub headers: HeaderFields,
}

/// The rate-limit header fields of a [`Verdict`]: each present or not, held in place
/// (no list to allocate per request).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderFields {
    /// `RateLimit-Policy`; absent when no endpoint of the route is limited.
    pub policy: Option<HeaderValue>,
    /// `RateLimit`; absent when no endpoint of the route is limited.
    pub ratelimit: Option<HeaderValue>,
    /// `Retry-After` in whole seconds; only on a denial that a wait can cure.
    pub retry_after: Option<HeaderValue>,
}

impl HeaderFields {
    /// The fields present, as (name, value) pairs: `ratelimit-policy`, `ratelimit`,
    /// `retry-after`, in that order.
    pub fn iter(&self) -> impl Iterator<Item = (HeaderName, &HeaderValue)> {
        [
            (POLICY, self.policy.as_ref()),
            (RATELIMIT, self.ratelimit.as_ref()),
            (http::header::RETRY_AFTER, self.retry_after.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
    }

    /// How many fields are present.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True when no field is present (an unlimited route).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
    /// written straight into reused buffers. The per-request path allocates only the
    /// `RateLimit` value: the rules are read under the middleware's read lock (one
    /// consistent rule set for the whole route, no reference count touched), and a
    /// single endpoint's `RateLimit-Policy` is the value its rule made once.
    fn check<E: AsRef<str>>(&self, endpoints: &[E], client: &str, cost: u64) -> Checked {
        let rules = self.snapshot();
        Checked::Now(with_lists(|mut lists| {
            for endpoint in endpoints {
                let endpoint = endpoint.as_ref();
                let Some(limit) = rules.get(endpoint) else {
                    continue; // unlimited: no fields, admitted
                };
                let decision = Self::acquire_n(&limit.limiter, endpoint, client, cost);
                lists.add_policy(limit.policy.as_ref(), |out| {
                    limit.spec.rule.write_ratelimit_policy(endpoint, out);
                });
                decision.write_ratelimit(endpoint, lists.next_ratelimit());
                if !decision.allowed {
                    let never = decision.retry_after == Nanos::MAX;
                    let retry = (!never).then(|| HeaderValue::from(decision.retry_after_secs()));
                    return lists.denied(endpoint, never, retry);
                }
            }
            lists.allowed()
        }))
    }
}

/// One verdict from the endpoints' decisions, taken lazily so that the first denial
/// stops the checking.
pub fn join<'a>(decisions: impl Iterator<Item = (&'a str, HttpDecision)>) -> Verdict {
    with_lists(|mut lists| {
        for (endpoint, decision) in decisions {
            let mut retry = None;
            for (name, value) in &decision.headers {
                match *name {
                    "RateLimit-Policy" => lists.add_policy(None, |out| out.push_str(value)),
                    "RateLimit" => lists.next_ratelimit().push_str(value),
                    "Retry-After" => retry = HeaderValue::try_from(value.as_str()).ok(),
                    _ => {}
                }
            }
            if !decision.decision.allowed {
                let never = decision.decision.retry_after == Nanos::MAX;
                return lists.denied(endpoint, never, retry.filter(|_| !never));
            }
        }
        lists.allowed()
    })
}

pub(super) const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
pub(super) const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// The `RateLimit-Policy` and `RateLimit` lists of a verdict being built, one item per
/// limited endpoint.
struct Lists<'a> {
    policy: &'a mut String,
    ratelimit: &'a mut String,
    /// The first item's ready-made value, while it is the only item (then the list is
    /// empty and this value is the whole field).
    made: Option<HeaderValue>,
}

impl<'a> Lists<'a> {
    fn new(policy: &'a mut String, ratelimit: &'a mut String) -> Self {
        Lists {
            policy,
            ratelimit,
            made: None,
        }
    }

    /// One more `RateLimit-Policy` item: `made` (the rule's ready value) if it has one,
    /// else what `write` appends. A first item with a ready value stays a value (the
    /// whole field, if no other item follows) and becomes text only if one does.
    fn add_policy(&mut self, made: Option<&HeaderValue>, write: impl FnOnce(&mut String)) {
        if let Some(first) = self.made.take() {
            self.policy
                .push_str(&String::from_utf8_lossy(first.as_bytes()));
        }
        match made {
            Some(value) if self.policy.is_empty() => self.made = Some(value.clone()),
            _ => write(separate(self.policy)),
        }
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
            headers: self.fields(None),
        }
    }

    /// Denied by `endpoint` (`never`: no wait helps), with `Retry-After` = `retry`.
    fn denied(self, endpoint: &str, never: bool, retry: Option<HeaderValue>) -> Verdict {
        Verdict {
            allowed: false,
            never,
            denied_by: Some(endpoint.to_string()),
            headers: self.fields(retry),
        }
    }

    /// The fields, leaving out an empty list (no limited endpoint) and, as a bug guard,
    /// a value that is not a valid field value (the library's structured-field strings
    /// are printable ASCII).
    fn fields(self, retry_after: Option<HeaderValue>) -> HeaderFields {
        let value = |list: &str| {
            (!list.is_empty())
                .then(|| HeaderValue::from_str(list).ok())
                .flatten()
        };
        HeaderFields {
            policy: self.made.or_else(|| value(self.policy)),
            ratelimit: value(self.ratelimit),
            retry_after,
        }
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
fn with_lists<R>(f: impl FnOnce(Lists<'_>) -> R) -> R {
    thread_local! {
        static LISTS: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
    }
    LISTS.with(|buffers| match buffers.try_borrow_mut() {
        Ok(mut buffers) => {
            let (policy, ratelimit) = &mut *buffers;
            policy.clear();
            ratelimit.clear();
            f(Lists::new(policy, ratelimit))
        }
        // Re-entered (an iterator given to `join` that builds a verdict itself).
        Err(_) => f(Lists::new(&mut String::new(), &mut String::new())),
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
