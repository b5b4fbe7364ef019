//! The service: decide, then answer 429 or call the inner service and add the fields.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, ready};

use ::tower::Service;
use http::header::{HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};

use super::key::RequestHead;
use super::limits::{Checked, HeaderFields, Limits, Verdict};
use super::{Denial, Shared};

const TOO_MANY: &str = "ratesim: too many requests; retry after the Retry-After seconds\n";
const NEVER: &str = "ratesim: this request exceeds the limit's capacity and can never pass\n";
const NO_KEY: &str =
    "ratesim: error: the rate limiter found no client key in this request (key extractor)\n";
const SHADOW: HeaderName = HeaderName::from_static("ratelimit-shadow-denied");

/// Limits requests to an inner service `S` with `L`; made by [`RateLimitLayer`].
///
/// [`RateLimitLayer`]: super::RateLimitLayer
pub struct RateLimitService<L, S> {
    shared: Arc<Shared<L>>,
    inner: S,
}

impl<L, S: Clone> Clone for RateLimitService<L, S> {
    fn clone(&self) -> Self {
        RateLimitService {
            shared: self.shared.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<L, S> RateLimitService<L, S> {
    pub(crate) fn new(shared: Arc<Shared<L>>, inner: S) -> Self {
        RateLimitService { shared, inner }
    }
}

/// The fields a response gets: the verdict's, and in shadow mode the would-be denial's
/// `RateLimit-Shadow-Denied`.
#[derive(Default)]
struct Headers {
    fields: HeaderFields,
    shadow: Option<HeaderValue>,
}

type BoxResponse<B, E> = Pin<Box<dyn Future<Output = Result<Response<B>, E>> + Send>>;

pin_project_lite::pin_project! {
    /// The response future of [`RateLimitService`].
    pub struct ResponseFuture<F, B, E> {
        #[pin]
        state: State<F, B, E>,
    }
}

pin_project_lite::pin_project! {
    #[project = Projected]
    enum State<F, B, E> {
        // Answered without the inner service (429 or 500).
        Answered { response: Option<Response<B>> },
        // The inner service's future; the fields are added to its response.
        Calling { #[pin] future: F, headers: Headers },
        // A decision that needs I/O first, then maybe the inner service.
        Deciding { future: BoxResponse<B, E> },
    }
}

impl<F, B, E> ResponseFuture<F, B, E> {
    fn answered(response: Response<B>) -> Self {
        ResponseFuture {
            state: State::Answered {
                response: Some(response),
            },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F, B, E>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            Projected::Answered { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending, // polled after completion: never ready again
            },
            Projected::Calling { future, headers } => {
                let mut response = ready!(future.poll(cx))?;
                add_headers(&mut response, std::mem::take(headers));
                Poll::Ready(Ok(response))
            }
            Projected::Deciding { future } => future.as_mut().poll(cx),
        }
    }
}

/// What to do with a request once decided.
enum Action<B> {
    Answer(Response<B>),
    Call(Headers),
}

impl<L, S, ReqB, ResB> Service<Request<ReqB>> for RateLimitService<L, S>
where
    L: Limits,
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: 'static,
    ReqB: Send + 'static,
    ResB: From<&'static str> + Send + 'static,
{
    type Response = Response<ResB>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResB, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        let action = {
            let shared = &self.shared;
            let head = RequestHead::of(&request);
            // Borrowed from the request where the extractor can: it is done with
            // before the request moves on.
            let Some(client) = shared.key.extract(&head) else {
                shared.metrics.no_key.fetch_add(1, Ordering::Relaxed);
                let response = plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    NO_KEY,
                    Headers::default(),
                );
                return ResponseFuture::answered(response);
            };
            let cost = match &shared.cost {
                Some(cost) => cost(&head),
                None => 1,
            };
            let path = request.uri().path();
            let checked = match shared.route(path) {
                Some(endpoints) => shared.limits.check(endpoints, &client, cost),
                None => shared.limits.check(&[path], &client, cost),
            };
            match checked {
                Checked::Now(verdict) => act(shared, verdict, path, &client),
                Checked::Later(verdict) => {
                    let client = client.into_owned();
                    return later(self, request, verdict, client);
                }
            }
        };
        match action {
            Action::Answer(response) => ResponseFuture::answered(response),
            Action::Call(headers) => ResponseFuture {
                state: State::Calling {
                    future: self.inner.call(request),
                    headers,
                },
            },
        }
    }
}

/// The future of a request whose verdict needs I/O: await it, then answer or call.
fn later<L, S, ReqB, ResB>(
    service: &mut RateLimitService<L, S>,
    request: Request<ReqB>,
    verdict: Pin<Box<dyn Future<Output = Verdict> + Send>>,
    client: String,
) -> ResponseFuture<S::Future, ResB, S::Error>
where
    L: Limits,
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: 'static,
    ReqB: Send + 'static,
    ResB: From<&'static str> + Send + 'static,
{
    // The service polled ready is the one that serves this request.
    let fresh = service.inner.clone();
    let mut inner = std::mem::replace(&mut service.inner, fresh);
    let shared = service.shared.clone();
    ResponseFuture {
        state: State::Deciding {
            future: Box::pin(async move {
                let verdict = verdict.await;
                let path = request.uri().path();
                match act(&shared, verdict, path, &client) {
                    Action::Answer(response) => Ok(response),
                    Action::Call(headers) => {
                        let mut response = inner.call(request).await?;
                        add_headers(&mut response, headers);
                        Ok(response)
                    }
                }
            }),
        },
    }
}

/// The verdict applied: counted, reported, and turned into an answer or a call.
fn act<L, B: From<&'static str>>(
    shared: &Shared<L>,
    verdict: Verdict,
    path: &str,
    client: &str,
) -> Action<B> {
    let metrics = &shared.metrics;
    if verdict.allowed {
        metrics.allowed.fetch_add(1, Ordering::Relaxed);
        return Action::Call(Headers {
            fields: verdict.headers,
            shadow: None,
        });
    }
    let policy = verdict.denied_by.as_deref().unwrap_or_default();
    if let Some(hook) = &shared.hook {
        hook(&Denial {
            path,
            client,
            policy,
            shadow: shared.dry_run,
        });
    }
    if shared.dry_run {
        metrics.shadow_denied.fetch_add(1, Ordering::Relaxed);
        return Action::Call(Headers {
            fields: HeaderFields {
                retry_after: None,
                ..verdict.headers
            },
            shadow: HeaderValue::try_from(policy).ok(),
        });
    }
    metrics.denied.fetch_add(1, Ordering::Relaxed);
    let body = if verdict.never { NEVER } else { TOO_MANY };
    let headers = Headers {
        fields: verdict.headers,
        shadow: None,
    };
    Action::Answer(plain(StatusCode::TOO_MANY_REQUESTS, body, headers))
}

fn plain<B: From<&'static str>>(
    status: StatusCode,
    body: &'static str,
    headers: Headers,
) -> Response<B> {
    let mut response = Response::new(B::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    add_headers(&mut response, headers);
    response
}

fn add_headers<B>(response: &mut Response<B>, headers: Headers) {
    let map = response.headers_mut();
    let HeaderFields {
        policy,
        ratelimit,
        retry_after,
    } = headers.fields;
    let fields = [
        (super::limits::POLICY, policy),
        (super::limits::RATELIMIT, ratelimit),
        (http::header::RETRY_AFTER, retry_after),
        (SHADOW, headers.shadow),
    ];
    for (name, value) in fields {
        if let Some(value) = value {
            map.insert(name, value);
        }
    }
}
