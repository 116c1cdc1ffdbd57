//! [`UpstreamAuth`]: the credentials an HTTP upstream gets, never the caller's own token.
//!
//! * [`UpstreamAuth::Bearer`]: a static token.
//! * [`UpstreamAuth::ClientCredentials`]: the proxy gets a token of its own from an OAuth 2.1
//!   authorization server (client credentials grant, `client_secret_basic`, the RFC 8707
//!   `resource` of the upstream), caches it and fetches a new one once 80 % of its lifetime
//!   has passed. Concurrent calls share one fetch.
//! * [`UpstreamAuth::TokenExchange`]: for each caller, the caller's token (the
//!   [`BearerToken`] the proxy's resource server verified) is exchanged (RFC 8693) for one
//!   whose audience is the upstream. Exchanged tokens are cached per caller token (by its
//!   SHA-256) until 80 % of their lifetime, at most [`OAuthClient::max_cached_tokens`] of
//!   them. A call without a caller token fails; it is never sent unauthenticated, and never
//!   with the caller's token. The proxy's own requests (the handshake, listings) use a
//!   client-credentials token of the same client for the same resource.
//!
//! Token exchange suits 2026-07-28 upstreams, where every request stands alone. On a
//! 2025-11-25 session the proxy opens one session with its own token and sends each
//! caller's requests on it with that caller's exchanged token: an upstream that binds a
//! session to the principal that opened it refuses them.
//!
//! When the upstream answers `401`, the token that was used is dropped, a new one is
//! fetched and the request is sent once more; a second `401` fails the request.
//!
//! The token endpoint is reached through the upstream's HTTP client: the same trusted roots
//! (the upstream's `ca_file` when set), no redirects, plus [`OAuthClient::timeout`] and
//! [`OAuthClient::max_response_bytes`].

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use base64::{Engine as _, prelude::BASE64_STANDARD};
use ferrymcp_core::{auth::BearerToken, secrets::redacted_url};
use sha2::{Digest as _, Sha256};

/// How an HTTP upstream is authenticated. `Debug` never shows a token or a secret.
///
/// ```
/// use ferrymcp_proxy::upstream_auth::{OAuthClient, UpstreamAuth};
/// let auth = UpstreamAuth::ClientCredentials(
///     OAuthClient::new("https://as.example/token", "gateway", "s3cret").scope("files:read"),
/// );
/// assert!(!format!("{auth:?}").contains("s3cret"));
/// assert!(!format!("{:?}", UpstreamAuth::Bearer("t0ken".into())).contains("t0ken"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum UpstreamAuth {
    /// A static token, sent as `Authorization: Bearer <token>`.
    Bearer(String),
    /// A token of the proxy's own, from the client credentials grant.
    ClientCredentials(OAuthClient),
    /// Each caller's token exchanged (RFC 8693) for one meant for the upstream.
    TokenExchange(OAuthClient),
}

impl std::fmt::Debug for UpstreamAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Self::ClientCredentials(client) => {
                f.debug_tuple("ClientCredentials").field(client).finish()
            }
            Self::TokenExchange(client) => f.debug_tuple("TokenExchange").field(client).finish(),
        }
    }
}

/// The default of [`OAuthClient::timeout`]: 10 s.
///
/// ```
/// assert_eq!(ferrymcp_proxy::upstream_auth::DEFAULT_TOKEN_TIMEOUT.as_secs(), 10);
/// ```
pub const DEFAULT_TOKEN_TIMEOUT: Duration = Duration::from_secs(10);

/// The default of [`OAuthClient::max_response_bytes`]: 64 KiB.
///
/// ```
/// assert_eq!(ferrymcp_proxy::upstream_auth::DEFAULT_MAX_TOKEN_RESPONSE_BYTES, 64 * 1024);
/// ```
pub const DEFAULT_MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// The default of [`OAuthClient::max_cached_tokens`]: 1024.
///
/// ```
/// assert_eq!(ferrymcp_proxy::upstream_auth::DEFAULT_MAX_CACHED_TOKENS, 1024);
/// ```
pub const DEFAULT_MAX_CACHED_TOKENS: usize = 1024;

/// The lifetime assumed for a token issued without `expires_in`: 60 s.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(60);

/// The proxy as an OAuth client of an authorization server's token endpoint.
///
/// ```
/// use std::time::Duration;
/// let client = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as.example/token", "gw", "s3cret")
///     .resource("https://files.internal/mcp")
///     .scope("files:read files:write")
///     .timeout(Duration::from_secs(5));
/// assert_eq!(client.resource.as_deref(), Some("https://files.internal/mcp"));
/// assert!(!format!("{client:?}").contains("s3cret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// The token endpoint.
    pub token_url: String,
    /// The client id.
    pub client_id: String,
    /// The client secret (sent with HTTP Basic, `client_secret_basic`).
    pub client_secret: String,
    /// The RFC 8707 `resource` asked for: the upstream's URL when `None`.
    pub resource: Option<String>,
    /// An RFC 8693 `audience` (token exchange only), when the server wants one.
    pub audience: Option<String>,
    /// The scopes asked for (space-separated), if any.
    pub scope: Option<String>,
    /// How long one exchange with the token endpoint may take
    /// ([`DEFAULT_TOKEN_TIMEOUT`], 10 s).
    pub timeout: Duration,
    /// The largest token response read ([`DEFAULT_MAX_TOKEN_RESPONSE_BYTES`], 64 KiB).
    pub max_response_bytes: usize,
    /// How many exchanged tokens are kept ([`DEFAULT_MAX_CACHED_TOKENS`], 1024); past it
    /// the expired ones, then the ones expiring first, make room.
    pub max_cached_tokens: usize,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("token_url", &redacted_url(&self.token_url))
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("resource", &self.resource)
            .field("audience", &self.audience)
            .field("scope", &self.scope)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_cached_tokens", &self.max_cached_tokens)
            .finish()
    }
}

impl OAuthClient {
    /// The client `client_id` with `client_secret` at the token endpoint `token_url`.
    ///
    /// ```
    /// let c = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as/token", "gw", "s");
    /// assert_eq!(c.max_cached_tokens, 1024);
    /// ```
    pub fn new(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self {
            token_url: token_url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            resource: None,
            audience: None,
            scope: None,
            timeout: DEFAULT_TOKEN_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_TOKEN_RESPONSE_BYTES,
            max_cached_tokens: DEFAULT_MAX_CACHED_TOKENS,
        }
    }

    /// Sets [`resource`](Self::resource).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as/token", "gw", "s").resource("https://up/mcp");
    /// ```
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// Sets [`audience`](Self::audience).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as/token", "gw", "s").audience("files");
    /// ```
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Sets [`scope`](Self::scope).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as/token", "gw", "s").scope("read");
    /// ```
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Sets [`timeout`](Self::timeout).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as/token", "gw", "s")
    ///     .timeout(std::time::Duration::from_secs(3));
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`max_response_bytes`](Self::max_response_bytes).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as/token", "gw", "s").max_response_bytes(8192);
    /// ```
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Sets [`max_cached_tokens`](Self::max_cached_tokens).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::upstream_auth::OAuthClient::new("https://as/token", "gw", "s").max_cached_tokens(64);
    /// ```
    pub fn max_cached_tokens(mut self, count: usize) -> Self {
        self.max_cached_tokens = count;
        self
    }
}

/// Why no upstream token could be had. Never shows a token or a secret.
///
/// ```
/// let error = ferrymcp_proxy::upstream_auth::TokenError::NoCallerToken;
/// assert!(error.to_string().contains("token exchange"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Token exchange needs the caller's token, and the request has none.
    #[error(
        "the upstream takes a token exchanged for the caller's (token exchange), and the request carries no verified caller token"
    )]
    NoCallerToken,
    /// The token endpoint refused (an OAuth error, or another status).
    #[error("the token endpoint {url} answered {status}: {detail}")]
    Refused {
        /// The endpoint (a password in it redacted).
        url: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` and `error_description`, or what else was wrong.
        detail: String,
    },
    /// The token endpoint could not be reached, or did not answer in time.
    #[error("reaching the token endpoint {url}: {reason}")]
    Unreachable {
        /// The endpoint (a password in it redacted).
        url: String,
        /// Why.
        reason: String,
    },
    /// The token endpoint's answer is not a usable token response.
    #[error("the token endpoint {url} answered with no usable token: {reason}")]
    BadResponse {
        /// The endpoint (a password in it redacted).
        url: String,
        /// Why.
        reason: String,
    },
}

/// A token and when to stop using it.
#[derive(Clone)]
struct Cached {
    token: Arc<str>,
    /// Past this (80 % of the lifetime) a new token is fetched.
    refresh_at: Instant,
}

impl Cached {
    fn fresh(&self) -> bool {
        Instant::now() < self.refresh_at
    }
}

/// The runtime side of an [`UpstreamAuth`]: tokens fetched, cached and dropped.
pub(crate) struct Credentials {
    kind: Kind,
}

enum Kind {
    Static(Arc<str>),
    Fetched(Box<Fetcher>),
}

struct Fetcher {
    client: OAuthClient,
    exchange: bool,
    resource: String,
    http: reqwest::Client,
    /// The proxy's own client-credentials token.
    own: Mutex<Option<Cached>>,
    /// Serializes fetches of the own token (single flight).
    own_fetch: tokio::sync::Mutex<()>,
    /// Exchanged tokens by the SHA-256 of the caller's token.
    exchanged: Mutex<HashMap<[u8; 32], Cached>>,
}

/// The token one upstream request carries, and the caller's token it was exchanged for (so
/// a `401` can exchange again).
#[derive(Clone)]
pub(crate) struct RequestToken {
    pub(crate) token: Arc<str>,
    pub(crate) caller: Option<BearerToken>,
}

impl Credentials {
    /// The credentials of `auth` for the upstream at `upstream_url`, fetched through `http`.
    pub(crate) fn new(auth: &UpstreamAuth, upstream_url: &str, http: reqwest::Client) -> Self {
        let (client, exchange) = match auth {
            UpstreamAuth::Bearer(token) => {
                return Self {
                    kind: Kind::Static(Arc::from(token.as_str())),
                };
            }
            UpstreamAuth::ClientCredentials(client) => (client, false),
            UpstreamAuth::TokenExchange(client) => (client, true),
        };
        Self {
            kind: Kind::Fetched(Box::new(Fetcher {
                resource: client
                    .resource
                    .clone()
                    .unwrap_or_else(|| upstream_url.to_owned()),
                client: client.clone(),
                exchange,
                http,
                own: Mutex::new(None),
                own_fetch: tokio::sync::Mutex::new(()),
                exchanged: Mutex::new(HashMap::new()),
            })),
        }
    }

    /// Whether a `401` is worth one more try with a new token.
    pub(crate) fn refreshable(&self) -> bool {
        matches!(self.kind, Kind::Fetched(_))
    }

    /// The token of the proxy's own requests (handshake, listings).
    pub(crate) async fn own(&self) -> Result<RequestToken, TokenError> {
        let token = match &self.kind {
            Kind::Static(token) => Arc::clone(token),
            Kind::Fetched(fetcher) => fetcher.own_token().await?,
        };
        Ok(RequestToken {
            token,
            caller: None,
        })
    }

    /// The token of a request made for a client of the proxy whose token is `caller`.
    pub(crate) async fn for_caller(
        &self,
        caller: Option<&BearerToken>,
    ) -> Result<RequestToken, TokenError> {
        match &self.kind {
            Kind::Fetched(fetcher) if fetcher.exchange => {
                let caller = caller.ok_or(TokenError::NoCallerToken)?;
                Ok(RequestToken {
                    token: fetcher.exchanged_token(caller).await?,
                    caller: Some(caller.clone()),
                })
            }
            _ => self.own().await,
        }
    }

    /// A new token for a request whose token `used` got a `401`.
    pub(crate) async fn renew(&self, used: &RequestToken) -> Result<RequestToken, TokenError> {
        if let Kind::Fetched(fetcher) = &self.kind {
            fetcher.forget(used);
        }
        match &used.caller {
            Some(caller) => self.for_caller(Some(caller)).await,
            None => self.own().await,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn caller_key(caller: &BearerToken) -> [u8; 32] {
    Sha256::digest(caller.expose().as_bytes()).into()
}

impl Fetcher {
    async fn own_token(&self) -> Result<Arc<str>, TokenError> {
        if let Some(cached) = lock(&self.own).as_ref().filter(|c| c.fresh()) {
            return Ok(Arc::clone(&cached.token));
        }
        let _flight = self.own_fetch.lock().await;
        // Another call may have fetched it while this one waited.
        if let Some(cached) = lock(&self.own).as_ref().filter(|c| c.fresh()) {
            return Ok(Arc::clone(&cached.token));
        }
        // Boxed: a fetch is a large future, and most calls find a cached token instead.
        let cached = Box::pin(self.fetch(None)).await?;
        let token = Arc::clone(&cached.token);
        *lock(&self.own) = Some(cached);
        Ok(token)
    }

    async fn exchanged_token(&self, caller: &BearerToken) -> Result<Arc<str>, TokenError> {
        let key = caller_key(caller);
        if let Some(cached) = lock(&self.exchanged).get(&key).filter(|c| c.fresh()) {
            return Ok(Arc::clone(&cached.token));
        }
        let cached = Box::pin(self.fetch(Some(caller))).await?;
        let token = Arc::clone(&cached.token);
        let max = self.client.max_cached_tokens;
        if max > 0 {
            let mut map = lock(&self.exchanged);
            if map.len() >= max && !map.contains_key(&key) {
                map.retain(|_, c| c.fresh());
                while map.len() >= max {
                    let Some(first) = map
                        .iter()
                        .min_by_key(|(_, c)| c.refresh_at)
                        .map(|(k, _)| *k)
                    else {
                        break;
                    };
                    map.remove(&first);
                }
            }
            map.insert(key, cached);
        }
        Ok(token)
    }

    /// Drops `used` from the cache, unless another call replaced it already.
    fn forget(&self, used: &RequestToken) {
        match &used.caller {
            Some(caller) => {
                let mut map = lock(&self.exchanged);
                let key = caller_key(caller);
                if map.get(&key).is_some_and(|c| c.token == used.token) {
                    map.remove(&key);
                }
            }
            None => {
                let mut own = lock(&self.own);
                if own.as_ref().is_some_and(|c| c.token == used.token) {
                    *own = None;
                }
            }
        }
    }

    /// The form body of a client-credentials request, or of an exchange of `caller`.
    fn form(&self, caller: Option<&BearerToken>) -> String {
        let client = &self.client;
        let mut form = form_urlencoded::Serializer::new(String::new());
        match caller {
            Some(caller) => {
                form.append_pair(
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:token-exchange",
                )
                .append_pair("subject_token", caller.expose())
                .append_pair(
                    "subject_token_type",
                    "urn:ietf:params:oauth:token-type:access_token",
                )
                .append_pair(
                    "requested_token_type",
                    "urn:ietf:params:oauth:token-type:access_token",
                );
                if let Some(audience) = &client.audience {
                    form.append_pair("audience", audience);
                }
            }
            None => {
                form.append_pair("grant_type", "client_credentials");
            }
        }
        form.append_pair("resource", &self.resource);
        if let Some(scope) = &client.scope {
            form.append_pair("scope", scope);
        }
        form.finish()
    }

    /// One request to the token endpoint: client credentials, or an exchange of `caller`.
    async fn fetch(&self, caller: Option<&BearerToken>) -> Result<Cached, TokenError> {
        let client = &self.client;
        let url = redacted_url(&client.token_url);
        let body = self.form(caller);
        // client_secret_basic: both parts form-encoded before base64 (RFC 6749 §2.3.1).
        let basic = format!(
            "{}:{}",
            form_urlencoded::byte_serialize(client.client_id.as_bytes()).collect::<String>(),
            form_urlencoded::byte_serialize(client.client_secret.as_bytes()).collect::<String>()
        );
        let request = self
            .http
            .post(&client.token_url)
            .header(
                http::header::AUTHORIZATION,
                format!("Basic {}", BASE64_STANDARD.encode(basic)),
            )
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        let started = Instant::now();
        let exchange = async {
            let mut response = request.send().await.map_err(|e| TokenError::Unreachable {
                url: url.clone(),
                reason: redact(crate::tls::chain(&e), &client.token_url),
            })?;
            let status = response.status();
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| TokenError::Unreachable {
                    url: url.clone(),
                    reason: redact(crate::tls::chain(&e), &client.token_url),
                })?
            {
                if bytes.len() + chunk.len() > client.max_response_bytes {
                    return Err(TokenError::BadResponse {
                        url: url.clone(),
                        reason: format!(
                            "the answer is over {} bytes (status {status})",
                            client.max_response_bytes
                        ),
                    });
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(client.timeout, exchange)
            .await
            .map_err(|_| TokenError::Unreachable {
                url: url.clone(),
                reason: format!("no answer within {} ms", client.timeout.as_millis()),
            })??;
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        if !status.is_success() {
            let text = |name: &str| json.get(name).and_then(serde_json::Value::as_str);
            let detail = match (text("error"), text("error_description")) {
                (Some(error), Some(description)) => format!("{error}: {description}"),
                (Some(error), None) => error.to_owned(),
                _ => "no OAuth error in the answer".to_owned(),
            };
            return Err(TokenError::Refused {
                url,
                status: status.as_u16(),
                detail,
            });
        }
        let bad = |reason: &str| TokenError::BadResponse {
            url: url.clone(),
            reason: reason.to_owned(),
        };
        let token = json
            .get("access_token")
            .and_then(serde_json::Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| bad("no access_token"))?;
        if http::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
            return Err(bad("the access_token cannot be sent in a header"));
        }
        let token_type = json
            .get("token_type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("Bearer");
        if !token_type.eq_ignore_ascii_case("bearer") {
            return Err(bad(&format!(
                "token_type {token_type:?}, not a bearer token"
            )));
        }
        let lifetime = json
            .get("expires_in")
            .and_then(serde_json::Value::as_u64)
            .map_or(DEFAULT_LIFETIME, Duration::from_secs);
        Ok(Cached {
            token: Arc::from(token),
            refresh_at: started + lifetime.mul_f64(0.8),
        })
    }
}

fn redact(text: String, url: &str) -> String {
    crate::url_secrets::redact(text, url)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A token endpoint on 127.0.0.1 that issues `token-<n>` (with `expires_in`) and counts
    /// its requests.
    async fn token_endpoint(expires_in: u64) -> (String, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&count);
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(move || {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    axum::Json(serde_json::json!({
                        "access_token": format!("token-{n}"),
                        "token_type": "Bearer",
                        "expires_in": expires_in,
                    }))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/token", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, count)
    }

    fn exchange(url: &str, max_cached: usize) -> Credentials {
        let client = OAuthClient::new(url, "gw", "secret").max_cached_tokens(max_cached);
        Credentials::new(
            &UpstreamAuth::TokenExchange(client),
            "http://127.0.0.1:9/mcp",
            reqwest::Client::new(),
        )
    }

    #[tokio::test]
    async fn au22_exchanged_tokens_are_cached_per_caller_within_the_bound() {
        let (url, fetches) = token_endpoint(300).await;
        let credentials = exchange(&url, 2);
        let callers = [
            BearerToken::new("caller-1"),
            BearerToken::new("caller-2"),
            BearerToken::new("caller-3"),
        ];
        let mut tokens = Vec::new();
        for caller in &callers {
            tokens.push(
                credentials
                    .for_caller(Some(caller))
                    .await
                    .expect("a token")
                    .token,
            );
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 3);
        // Caller 3 is cached; caller 1 (the oldest) made room for it.
        let again = credentials
            .for_caller(Some(&callers[2]))
            .await
            .expect("cached");
        assert_eq!(again.token, tokens[2]);
        assert_eq!(fetches.load(Ordering::SeqCst), 3);
        let refetched = credentials
            .for_caller(Some(&callers[0]))
            .await
            .expect("fetched");
        assert_ne!(refetched.token, tokens[0]);
        assert_eq!(fetches.load(Ordering::SeqCst), 4);
        // No caller token, no exchange (and no request).
        assert!(matches!(
            credentials.for_caller(None).await,
            Err(TokenError::NoCallerToken)
        ));
        assert_eq!(fetches.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn au22_a_token_past_most_of_its_lifetime_is_fetched_again() {
        // `expires_in: 0`: every use is past 80 % of its lifetime.
        let (url, fetches) = token_endpoint(0).await;
        let credentials = Credentials::new(
            &UpstreamAuth::ClientCredentials(OAuthClient::new(&url, "gw", "secret")),
            "http://127.0.0.1:9/mcp",
            reqwest::Client::new(),
        );
        let first = credentials.own().await.expect("a token");
        let second = credentials.own().await.expect("a token");
        assert_ne!(first.token, second.token);
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        // A long-lived one is kept, and concurrent callers share one fetch.
        let (url, fetches) = token_endpoint(300).await;
        let credentials = Arc::new(Credentials::new(
            &UpstreamAuth::ClientCredentials(OAuthClient::new(&url, "gw", "secret")),
            "http://127.0.0.1:9/mcp",
            reqwest::Client::new(),
        ));
        let calls = (0..8).map(|_| {
            let credentials = Arc::clone(&credentials);
            tokio::spawn(async move { credentials.own().await.map(|t| t.token) })
        });
        let tokens: HashSet<Arc<str>> = futures::future::join_all(calls)
            .await
            .into_iter()
            .map(|joined| joined.expect("joined").expect("a token"))
            .collect();
        assert_eq!(tokens.len(), 1);
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn debug_output_never_shows_a_secret() {
        let client =
            OAuthClient::new("https://u:hunter2@as/token", "gw", "s3cret-value").scope("a");
        for text in [
            format!("{client:?}"),
            format!("{:?}", UpstreamAuth::ClientCredentials(client.clone())),
            format!("{:?}", UpstreamAuth::TokenExchange(client)),
            format!("{:?}", UpstreamAuth::Bearer("static-t0ken".into())),
        ] {
            assert!(!text.contains("s3cret-value"), "{text}");
            assert!(!text.contains("hunter2"), "{text}");
            assert!(!text.contains("static-t0ken"), "{text}");
        }
    }
}
