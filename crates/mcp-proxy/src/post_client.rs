//! The HTTP client of the direct posts: hyper's pooled client, or reqwest where a proxy or
//! the URL's credentials need it.
//!
//! reqwest parses the URL again for its redirect policy, checks proxies and layers a few
//! services around hyper's client on every request; on the proxy's hot path that was a
//! quarter of the hop's CPU. A direct post therefore goes through hyper's pooled client with
//! the same TLS configuration (rustls, the target's roots, HTTP/1.1), `TCP_NODELAY` and no
//! redirects, unless a system proxy (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`) applies to
//! the upstream or its URL carries a user and password: those keep reqwest, which speaks
//! to proxies and turns the user info into basic authentication, as the session does.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full, combinators::UnsyncBoxBody};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{Client, connect::HttpConnector};

/// How long a pooled connection to an upstream may stay idle before it is closed.
const IDLE_CONNECTION: std::time::Duration = std::time::Duration::from_secs(90);

/// A body of an answer, whichever client read it.
pub(crate) type AnswerBody = UnsyncBoxBody<Bytes, BoxError>;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Sends the direct posts of one upstream.
#[derive(Clone)]
pub(crate) enum PostClient {
    /// hyper's pooled client, with the upstream's TLS configuration.
    Hyper(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
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
        let proxied = http::Uri::try_from(url.as_str())
            .map(|uri| {
                hyper_util::client::proxy::matcher::Matcher::from_system()
                    .intercept(&uri)
                    .is_some()
            })
            .unwrap_or(true);
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
        // left idle is closed after `IDLE_CONNECTION`.
        Self::Hyper(
            Client::builder(hyper_util::rt::TokioExecutor::new())
                .pool_idle_timeout(IDLE_CONNECTION)
                .pool_timer(hyper_util::rt::TokioTimer::new())
                .build(connector),
        )
    }

    /// Sends `request`; `Err` holds the reason the exchange broke off, with its causes.
    pub(crate) async fn send(
        &self,
        request: Request<Bytes>,
    ) -> Result<Response<AnswerBody>, String> {
        match self {
            Self::Hyper(client) => {
                let response = client
                    .request(request.map(Full::new))
                    .await
                    .map_err(|e| crate::tls::chain(&e))?;
                Ok(response.map(|body| body.map_err(box_error).boxed_unsync()))
            }
            Self::Reqwest(client) => {
                // Built from the URL's text, so that reqwest turns user info into basic
                // authentication.
                let (parts, body) = request.into_parts();
                let response = client
                    .request(parts.method, parts.uri.to_string())
                    .headers(parts.headers)
                    .body(body)
                    .send()
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
