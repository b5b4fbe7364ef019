//! Who a request counts against: the client key extractors.
//!
//! A [`KeyExtractor`] reads a request's head (never its body) and names the client, or
//! returns `None` when it cannot; the layer then answers 500 and does not call the
//! inner service, since a limit that silently stops applying is worse than an error.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use http::header::HeaderName;
use http::{Extensions, HeaderMap, Method, Uri};

/// The head of a request, as the extractors see it.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    /// The method.
    pub method: &'a Method,
    /// The URI (its path picks the endpoint).
    pub uri: &'a Uri,
    /// The header fields.
    pub headers: &'a HeaderMap,
    /// The extensions: where servers put the peer address (axum's `ConnectInfo`).
    pub extensions: &'a Extensions,
}

impl<'a> RequestHead<'a> {
    /// The head of `request`.
    pub fn of<B>(request: &'a http::Request<B>) -> Self {
        RequestHead {
            method: request.method(),
            uri: request.uri(),
            headers: request.headers(),
            extensions: request.extensions(),
        }
    }
}

/// Names the client a request counts against.
pub trait KeyExtractor: Send + Sync + 'static {
    /// The client key, or `None` when this request carries none. A key that is a
    /// header's text can be borrowed from the request (`Cow::Borrowed`): the layer is
    /// done with the key before it hands the request on, so nothing is copied.
    fn extract<'a>(&self, head: &RequestHead<'a>) -> Option<Cow<'a, str>>;
}

/// The peer's IP address from a [`SocketAddr`] request extension, as a hyper server
/// loop inserts it. With axum, whose `ConnectInfo<SocketAddr>` is a different type,
/// use [`KeyFn`]:
///
/// ```ignore
/// KeyFn::new(|head| head.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip().to_string()))
/// ```
///
/// (`examples/axum.rs` does exactly this). The port is left out: one client opens many
/// connections.
#[derive(Debug, Clone, Copy, Default)]
pub struct PeerIp;

impl KeyExtractor for PeerIp {
    fn extract<'a>(&self, head: &RequestHead<'a>) -> Option<Cow<'a, str>> {
        head.extensions
            .get::<SocketAddr>()
            .map(|addr| Cow::Owned(addr.ip().to_string()))
    }
}

/// A header's value as the key, e.g. an API key in `x-api-key`. A request without the
/// header (or with a value that is not visible ASCII) has no key.
#[derive(Debug, Clone)]
pub struct HeaderKey {
    name: HeaderName,
}

impl HeaderKey {
    /// The key is the value of header `name`.
    pub fn new(name: HeaderName) -> Self {
        HeaderKey { name }
    }
}

impl KeyExtractor for HeaderKey {
    fn extract<'a>(&self, head: &RequestHead<'a>) -> Option<Cow<'a, str>> {
        let value = head.headers.get(&self.name)?.to_str().ok()?.trim();
        (!value.is_empty()).then_some(Cow::Borrowed(value))
    }
}

/// The first hop of `X-Forwarded-For`: the original client as the *first* proxy saw it.
///
/// **Trust caveat**: any client can send an `X-Forwarded-For` of its choosing. Use this
/// only behind a proxy you control that overwrites (not appends to) the header;
/// otherwise every request can claim a fresh key and escape the limit. Behind a proxy
/// that appends, the trustworthy hop is the one your proxy added (the last), which
/// [`KeyFn`] can pick. A request without the header has no key.
#[derive(Debug, Clone, Copy, Default)]
pub struct ForwardedFor;

impl KeyExtractor for ForwardedFor {
    fn extract<'a>(&self, head: &RequestHead<'a>) -> Option<Cow<'a, str>> {
        // A `HeaderName`, not a `&str`: a string name is parsed on every lookup.
        const XFF: HeaderName = HeaderName::from_static("x-forwarded-for");
        let value = head.headers.get(XFF)?.to_str().ok()?;
        let first = value.split(',').next()?.trim();
        (!first.is_empty()).then_some(Cow::Borrowed(first))
    }
}

type HeadFn = dyn Fn(&RequestHead<'_>) -> Option<String> + Send + Sync;

/// Any function of the request head (returning an owned key).
pub struct KeyFn {
    f: Arc<HeadFn>,
}

impl KeyFn {
    /// The key is `f(head)`.
    pub fn new(f: impl Fn(&RequestHead<'_>) -> Option<String> + Send + Sync + 'static) -> Self {
        KeyFn { f: Arc::new(f) }
    }
}

impl KeyExtractor for KeyFn {
    fn extract<'a>(&self, head: &RequestHead<'a>) -> Option<Cow<'a, str>> {
        (self.f)(head).map(Cow::Owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(header: Option<(&'static str, &'static str)>) -> http::Request<()> {
        let mut builder = http::Request::builder().uri("/x");
        if let Some((name, value)) = header {
            builder = builder.header(name, value);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn forwarded_for_takes_the_first_hop_trimmed() {
        let req = request(Some(("x-forwarded-for", " 203.0.113.7 , 10.0.0.1")));
        let key = ForwardedFor.extract(&RequestHead::of(&req));
        assert_eq!(key.as_deref(), Some("203.0.113.7"));
        let req = request(Some(("x-forwarded-for", " , 10.0.0.1")));
        assert_eq!(ForwardedFor.extract(&RequestHead::of(&req)), None);
        assert_eq!(ForwardedFor.extract(&RequestHead::of(&request(None))), None);
    }

    #[test]
    fn header_key_reads_the_named_header_only() {
        let extractor = HeaderKey::new(HeaderName::from_static("x-api-key"));
        let req = request(Some(("x-api-key", "k-123")));
        assert_eq!(
            extractor.extract(&RequestHead::of(&req)).as_deref(),
            Some("k-123")
        );
        let req = request(Some(("x-other", "k-123")));
        assert_eq!(extractor.extract(&RequestHead::of(&req)), None);
    }

    #[test]
    fn peer_ip_drops_the_port() {
        let mut req = request(None);
        assert_eq!(PeerIp.extract(&RequestHead::of(&req)), None);
        req.extensions_mut()
            .insert(SocketAddr::from(([127, 0, 0, 2], 4321)));
        assert_eq!(
            PeerIp.extract(&RequestHead::of(&req)).as_deref(),
            Some("127.0.0.2")
        );
    }
}
