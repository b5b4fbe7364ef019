//! The tower layer's documented edges driven in-process (issue 32): the layer wraps a
//! plain `service_fn` and each request goes through `ServiceExt::oneshot`, with no
//! socket, so the test is exact and fast enough for the mutation runs of the `tower`
//! area (scripts/mutants.sh). tests/tower_http.rs drives the same layer over real HTTP.
#![cfg(feature = "tower")]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use http::{Request, Response, StatusCode};
use ratesim::store::InMemory;
use ratesim::tower::limits::join;
use ratesim::tower::{Checked, ForwardedFor, Limits, RateLimitLayer};
use ratesim::{FakeClock, Middleware};

type Mw = Middleware<InMemory<FakeClock>>;
use tower::{Layer, ServiceExt, service_fn};

const TWO_PER_TEN: &str = r#"
    [[endpoint]]
    path = "/a"
    algorithm = "fixed_window"
    max_requests = 2
    window = "10s"
"#;

/// Sends one request to `path` as `who` (no `X-Forwarded-For` when `None`) through
/// `layer` around a service that counts its calls; the status.
async fn send(
    layer: &RateLimitLayer<Mw>,
    calls: &Arc<AtomicUsize>,
    path: &str,
    who: Option<&str>,
) -> StatusCode {
    let calls = calls.clone();
    let inner = service_fn(move |_: Request<String>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, Infallible>(Response::new(String::from("ok"))) }
    });
    let mut request = Request::get(path);
    if let Some(who) = who {
        request = request.header("x-forwarded-for", who);
    }
    let request = request.body(String::new()).unwrap();
    let response = layer.layer(inner).oneshot(request).await.unwrap();
    response.status()
}

/// `LayerMetrics` counts each request once, under what happened to it: allowed (an
/// unlimited endpoint's too), denied with a 429, or answered 500 for want of a key
/// (the service not called for either). Rules out a counter that is never moved, one
/// stuck at its first value, and a denial or a missing key counted as allowed.
#[tokio::test]
async fn the_layer_counts_allowed_denied_and_keyless_requests_apart() {
    let mw = Arc::new(Middleware::with_clock(FakeClock::default()));
    mw.reload_str(TWO_PER_TEN, "rules.toml").unwrap();
    let layer = RateLimitLayer::new(mw, ForwardedFor);
    let metrics = layer.metrics();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut statuses = Vec::new();
    for (path, who) in [
        ("/a", Some("c")),
        ("/a", Some("c")),
        ("/a", Some("c")),
        ("/a", None),
        ("/free", Some("c")),
        ("/a", Some("c")),
        ("/a", None),
        ("/a", Some("d")),
    ] {
        statuses.push(send(&layer, &calls, path, who).await);
    }
    let (ok, many, error) = (
        StatusCode::OK,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::INTERNAL_SERVER_ERROR,
    );
    assert_eq!(statuses, [ok, ok, many, error, ok, many, error, ok]);
    let counts = (
        metrics.allowed(),
        metrics.denied(),
        metrics.no_key(),
        metrics.shadow_denied(),
    );
    assert_eq!(counts, (4, 2, 2, 0), "(allowed, denied, no key, shadow)");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "only the allowed reach the service"
    );
}

/// A route without `*` maps exactly its own path, and only it, to its endpoints: `/x`
/// spends `/a`'s quota, `/xy` and `/x/` are their own (unlimited) endpoints, and `/a`
/// itself shares the quota `/x` used. Rules out a pattern that matches every other path,
/// one matched as a prefix, and a mapped path also limited under its own name.
#[tokio::test]
async fn an_exact_route_maps_its_own_path_and_no_other() {
    let mw = Arc::new(Middleware::with_clock(FakeClock::default()));
    mw.reload_str(TWO_PER_TEN, "rules.toml").unwrap();
    let layer = RateLimitLayer::new(mw, ForwardedFor).route("/x", ["/a"]);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut statuses = Vec::new();
    for path in ["/x", "/xy", "/x/", "/xy", "/x", "/x", "/a"] {
        statuses.push(send(&layer, &calls, path, Some("c")).await);
    }
    let (ok, many) = (StatusCode::OK, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(statuses, [ok, ok, ok, ok, ok, many, many]);
}

/// `limits::join` (the verdict an async store such as Redis builds from each endpoint's
/// decision) is the memory store's verdict: both fields list one entry per endpoint
/// consulted, in order, and the first refusal ends the list and names itself with its
/// `Retry-After`. Two middlewares with the same rules, one asked through `Limits`, the
/// other decision by decision and joined. Rules out a join that drops either field's
/// entries or keeps consulting after a refusal.
#[test]
fn joining_endpoint_decisions_gives_the_memory_stores_verdict() {
    let text = format!(
        "{TWO_PER_TEN}\n[[endpoint]]\npath = \"/b\"\nalgorithm = \"fixed_window\"\n\
         max_requests = 5\nwindow = \"1m\"\n"
    );
    let memory = Middleware::with_clock(FakeClock::default());
    let joined = Middleware::with_clock(FakeClock::default());
    for mw in [&memory, &joined] {
        mw.reload_str(&text, "rules.toml").unwrap();
    }
    for round in 0..3 {
        let Checked::Now(want) = Limits::check(&memory, &["/a", "/b"], "c", 1) else {
            unreachable!("memory answers now")
        };
        let mut decisions = Vec::new();
        for endpoint in ["/a", "/b"] {
            let decision = joined.check_with_headers(endpoint, "c");
            let refused = !decision.decision.allowed;
            decisions.push((endpoint, decision));
            if refused {
                break;
            }
        }
        let got = join(decisions.into_iter());
        assert_eq!(got, want, "round {round}");
        let names: Vec<String> = got.headers.iter().map(|(n, _)| n.to_string()).collect();
        let expected: &[&str] = if round < 2 {
            &["ratelimit-policy", "ratelimit"]
        } else {
            &["ratelimit-policy", "ratelimit", "retry-after"]
        };
        assert_eq!(names, expected, "round {round}");
        assert_eq!(got.headers.len(), expected.len(), "round {round}");
        assert!(!got.headers.is_empty(), "round {round}");
        let policy = got.headers.policy.as_ref().unwrap().to_str().unwrap();
        let listed = if round < 2 { 2 } else { 1 };
        assert_eq!(
            policy.split(", ").count(),
            listed,
            "round {round}: {policy}"
        );
    }
}

/// An inner service that is ready only when its gate is open, and fails to get ready
/// when it is broken.
#[derive(Clone)]
struct Gate {
    open: bool,
    broken: bool,
}

impl tower::Service<Request<String>> for Gate {
    type Response = Response<String>;
    type Error = &'static str;
    type Future = std::future::Ready<Result<Response<String>, &'static str>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), &'static str>> {
        match (self.broken, self.open) {
            (true, _) => Poll::Ready(Err("broken")),
            (false, true) => Poll::Ready(Ok(())),
            (false, false) => Poll::Pending,
        }
    }

    fn call(&mut self, _: Request<String>) -> Self::Future {
        std::future::ready(Ok(Response::new(String::from("ok"))))
    }
}

/// The layer is ready exactly when the service it wraps is, and passes on its error:
/// back-pressure (a concurrency limit, a full queue) and a failed inner service reach
/// the caller through it. Rules out a layer that is always ready.
#[test]
fn the_layer_is_ready_when_the_inner_service_is_and_passes_its_error_on() {
    let mw = Arc::new(Middleware::with_clock(FakeClock::default()));
    mw.reload_str(TWO_PER_TEN, "rules.toml").unwrap();
    let layer = RateLimitLayer::new(mw, ForwardedFor);
    let mut cx = Context::from_waker(Waker::noop());
    let mut ready = |open, broken| {
        let mut service = layer.layer(Gate { open, broken });
        tower::Service::<Request<String>>::poll_ready(&mut service, &mut cx)
    };
    assert_eq!(ready(true, false), Poll::Ready(Ok(())));
    assert_eq!(ready(false, false), Poll::Pending);
    assert_eq!(ready(true, true), Poll::Ready(Err("broken")));
}

/// An unlimited route's fields: none present, and `len`/`is_empty` say so.
#[test]
fn header_fields_with_nothing_present_are_empty() {
    let none = ratesim::tower::HeaderFields::default();
    assert_eq!((none.len(), none.is_empty()), (0, true));
    assert_eq!(none.iter().count(), 0);
}
