//! The HTTP client of the direct posts: hyper's HTTP/1.1 connections, or reqwest where a
//! proxy or the URL's credentials need it.
//!
//! reqwest parses the URL again for its redirect policy, checks proxies and layers a few
//! services around hyper's client on every request; on the proxy's hot path that was a
//! quarter of the hop's CPU. A direct post therefore goes over hyper's HTTP/1.1 connections
//! to the endpoint, kept open between posts ([`Http1Pool`]), with the same TLS configuration
//! (rustls, the target's roots, HTTP/1.1), `TCP_NODELAY` and no redirects, unless a system
//! proxy (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`) applies to the upstream or its URL
//! carries a user and password: those keep reqwest, which speaks to proxies and turns the
//! user info into basic authentication, as the session does.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full, combinators::UnsyncBoxBody};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::http1_pool::Http1Pool;

/// A body of an answer, whichever client read it.
pub(crate) type AnswerBody = UnsyncBoxBody<Bytes, BoxError>;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Sends the direct posts of one upstream.
#[derive(Clone)]
pub(crate) enum PostClient {
    /// hyper's HTTP/1.1 connections to the endpoint, with the upstream's TLS configuration.
    Hyper(Http1Pool),
    /// reqwest (the session's client), for a proxied upstream or one whose URL has user
    /// info.
    Reqwest(reqwest::Client),
}

impl PostClient {
    /// The client for posts to `url`: hyper's, configured with `tls`, unless a system
    /// proxy applies to `url` or it has user info; then `fallback`.
    pub(crate) fn for_url(
        url: &reqwest::Url,
        tls: rustls::ClientConfig,
        fallback: reqwest::Client,
    ) -> Self {
        let Ok(endpoint) = http::Uri::try_from(url.as_str()) else {
            return Self::Reqwest(fallback);
        };
        let proxied = hyper_util::client::proxy::matcher::Matcher::from_system()
            .intercept(&endpoint)
            .is_some();
        if proxied || !url.username().is_empty() || url.password().is_some() {
            return Self::Reqwest(fallback);
        }
        // hyper-rustls sets the ALPN protocols itself (HTTP/1.1 only, as `enable_http1` asks).
        let mut tls = tls;
        tls.alpn_protocols.clear();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        // One connection per call in flight (the front's in-flight limit bounds them); one
        // left idle is closed after `http1_pool::IDLE_CONNECTION`.
        match Http1Pool::new(endpoint, connector) {
            Ok(pool) => Self::Hyper(pool),
            Err(_) => Self::Reqwest(fallback),
        }
    }

    /// Sends `request`; `Err` holds the reason the exchange broke off, with its causes.
    pub(crate) async fn send(
        &self,
        request: Request<Bytes>,
    ) -> Result<Response<AnswerBody>, String> {
        match self {
            Self::Hyper(pool) => {
                let response = pool.send(request.map(Full::new)).await?;
                Ok(response.map(|body| body.map_err(box_error).boxed_unsync()))
            }
            Self::Reqwest(client) => {
                // Built from the URL's text, so that reqwest turns user info into basic
                // authentication. Boxed: this client is the rare one, and its future would
                // otherwise size every post's.
                let (parts, body) = request.into_parts();
                let response = Box::pin(
                    client
                        .request(parts.method, parts.uri.to_string())
                        .headers(parts.headers)
                        .body(body)
                        .send(),
                )
                .await
                .map_err(|e| crate::tls::chain(&e))?;
                Ok(http::Response::from(response)
                    .map(|body| body.map_err(box_error).boxed_unsync()))
            }
        }
    }
}

fn box_error<E: std::error::Error + Send + Sync + 'static>(error: E) -> BoxError {
    Box::new(error)
}
