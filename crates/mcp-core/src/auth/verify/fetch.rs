//! Bounded requests to an authorization server: a timeout over the whole exchange, a body
//! limit, no redirects, and URLs shown without their secrets.

use std::{error::Error as _, time::Duration};

use reqwest::{StatusCode, Url};

use super::AuthConfigError;

/// The default timeout of one request to the authorization server (connect, send and read
/// the whole body): 5 s.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default limit on an answer's body: 1 MiB.
pub(crate) const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// How requests to the authorization server are made.
#[derive(Clone)]
pub(crate) struct Fetcher {
    pub(crate) client: reqwest::Client,
    pub(crate) timeout: Duration,
    pub(crate) max_response_bytes: usize,
}

/// Why a request to the authorization server gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FetchError {
    /// No answer (connection refused, DNS, TLS, timeout): the message says which.
    Unreachable(String),
    /// The body was larger than the limit.
    TooLarge(String),
    /// A redirect, which is never followed.
    Redirected(String),
}

impl FetchError {
    pub(crate) fn message(&self) -> &str {
        match self {
            Self::Unreachable(m) | Self::TooLarge(m) | Self::Redirected(m) => m,
        }
    }
}

impl Fetcher {
    /// A fetcher with the default client (no redirects) unless `client` is given.
    pub(crate) fn new(
        client: Option<reqwest::Client>,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Self, AuthConfigError> {
        if timeout.is_zero() {
            return Err(AuthConfigError::Zero("fetch_timeout"));
        }
        if max_response_bytes == 0 {
            return Err(AuthConfigError::Zero("max_response_bytes"));
        }
        let client = match client {
            Some(client) => client,
            None => default_client()?,
        };
        Ok(Self {
            client,
            timeout,
            max_response_bytes,
        })
    }

    /// Sends `request` (built for `url`) and reads the whole answer within the limits.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        url: &Url,
    ) -> Result<(StatusCode, Vec<u8>), FetchError> {
        let shown = redacted(url);
        match tokio::time::timeout(self.timeout, self.exchange(request, url, &shown)).await {
            Ok(answer) => answer,
            Err(_) => Err(FetchError::Unreachable(format!(
                "{shown} did not answer within {:?}",
                self.timeout
            ))),
        }
    }

    /// `GET url` with `Accept: application/json`.
    pub(crate) async fn get(&self, url: &Url) -> Result<(StatusCode, Vec<u8>), FetchError> {
        let request = self
            .client
            .get(url.clone())
            .header(http::header::ACCEPT, "application/json");
        self.send(request, url).await
    }

    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        url: &Url,
        shown: &str,
    ) -> Result<(StatusCode, Vec<u8>), FetchError> {
        let mut response = request
            .send()
            .await
            .map_err(|e| FetchError::Unreachable(format!("{shown}: {}", describe(e))))?;
        let status = response.status();
        if status.is_redirection() || response.url() != url {
            return Err(FetchError::Redirected(format!(
                "{shown} answered with a redirect, which is not followed"
            )));
        }
        let too_large = || {
            FetchError::TooLarge(format!(
                "the answer of {shown} is larger than {} bytes",
                self.max_response_bytes
            ))
        };
        if response
            .content_length()
            .is_some_and(|length| length > self.max_response_bytes as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| FetchError::Unreachable(format!("{shown}: {}", describe(e))))?
        {
            if body.len() + chunk.len() > self.max_response_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    }
}

/// The client used when none is given: no redirects.
fn default_client() -> Result<reqwest::Client, AuthConfigError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| AuthConfigError::HttpClient(describe(e)))
}

/// A reqwest error and its causes, without the URL (which may hold a password).
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `url` without a password or query, for messages and `Debug`.
pub(crate) fn redacted(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("<redacted>"));
    }
    if shown.query().is_some() {
        shown.set_query(Some("<redacted>"));
    }
    shown.to_string()
}

/// Parses an `http`/`https` URL for the builder named `what`.
pub(crate) fn parse_http_url(text: &str, what: &'static str) -> Result<Url, AuthConfigError> {
    let url = Url::parse(text).map_err(|e| AuthConfigError::InvalidUrl {
        what,
        reason: e.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(AuthConfigError::InvalidUrl {
            what,
            reason: format!("{} is not an http(s) URL with a host", redacted(&url)),
        });
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn au12_urls_in_messages_hide_their_password_and_query() {
        let url = Url::parse("https://user:hunter2@as.example/introspect?key=s3cret").unwrap();
        let shown = redacted(&url);
        assert!(
            !shown.contains("hunter2") && !shown.contains("s3cret"),
            "{shown}"
        );
        assert!(shown.contains("as.example/introspect"), "{shown}");
    }

    #[test]
    fn au11_only_http_urls_with_a_host_are_accepted() {
        assert!(parse_http_url("https://as.example", "issuer").is_ok());
        assert!(parse_http_url("ftp://as.example", "issuer").is_err());
        assert!(parse_http_url("not a url", "issuer").is_err());
        let refused = parse_http_url("file:///etc/passwd", "jwks_uri").unwrap_err();
        assert!(matches!(
            refused,
            AuthConfigError::InvalidUrl {
                what: "jwks_uri",
                ..
            }
        ));
    }
}
