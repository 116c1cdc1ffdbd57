//! [`IntrospectionVerifier`]: opaque tokens checked by asking the authorization server
//! (RFC 7662).

use std::{
    fmt,
    sync::Arc,
    time::{Duration, SystemTime},
};

use base64::{Engine as _, engine::general_purpose::STANDARD};
use ferrymcp_types::JsonObject;
use reqwest::StatusCode;
use serde_json::Value;
use url::{Url, form_urlencoded};

use super::{
    AuthConfigError, TokenVerifier, Verified, VerifyError,
    claims::{check_audience, check_identity, check_times, principal_from_claims},
    fetch::{DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, Fetcher, parse_http_url, redacted},
    jwt::check_audiences,
};

/// Verifies tokens by RFC 7662 introspection: a `POST` of the token
/// (`token_type_hint=access_token`) to the authorization server's introspection endpoint,
/// authenticated as a client (`client_secret_basic`). The answer must say `active: true`,
/// name one of this server's audiences in `aud` (an answer without `aud` is refused unless
/// [`allow_missing_audience`](IntrospectionVerifierBuilder::allow_missing_audience)), come
/// from the configured issuer when one is set, and not be past its `exp`.
///
/// An endpoint that cannot be reached, answers 5xx or 429, or refuses this server's client
/// credentials (401) gives [`VerifyError::Unavailable`]; other 4xx answers mean the token
/// is invalid. Every call asks the endpoint: wrap the verifier in a
/// [`CachedVerifier`](super::CachedVerifier) so that a repeated token is asked about once.
///
/// ```no_run
/// use ferrymcp_core::auth::verify::{CachedVerifier, IntrospectionVerifier, TokenVerifier};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let verifier = CachedVerifier::new(
///     IntrospectionVerifier::builder("https://auth.example.com/token/introspection")
///         .client_credentials("mcp-server", "s3cret")
///         .audience("https://mcp.example.com/mcp")
///         .issuer("https://auth.example.com")
///         .build()?,
/// );
/// let verified = verifier.verify("opaque-token").await?;
/// # let _ = verified; Ok(()) }
/// ```
#[derive(Clone)]
pub struct IntrospectionVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    endpoint: Url,
    client_id: String,
    /// `Basic base64(urlencode(id):urlencode(secret))`; never shown.
    authorization: String,
    audiences: Vec<String>,
    issuer: Option<String>,
    allow_missing_audience: bool,
    leeway: Duration,
    fetcher: Fetcher,
}

/// Settings of an [`IntrospectionVerifier`]; [`build`](Self::build) checks them. `Debug`
/// never shows the client secret.
///
/// ```
/// use ferrymcp_core::auth::verify::IntrospectionVerifier;
/// let builder = IntrospectionVerifier::builder("https://as.example/introspect")
///     .client_credentials("mcp-server", "s3cret")
///     .audience("https://mcp.example.com/mcp");
/// assert!(!format!("{builder:?}").contains("s3cret"));
/// let verifier = builder.build().unwrap();
/// assert!(!format!("{verifier:?}").contains("s3cret"));
/// ```
#[must_use]
pub struct IntrospectionVerifierBuilder {
    endpoint: String,
    credentials: Option<(String, String)>,
    audiences: Vec<String>,
    issuer: Option<String>,
    allow_missing_audience: bool,
    leeway: Duration,
    fetch_timeout: Duration,
    max_response_bytes: usize,
    client: Option<reqwest::Client>,
}

impl IntrospectionVerifier {
    /// The default [`fetch_timeout`](IntrospectionVerifierBuilder::fetch_timeout): 5 s.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::IntrospectionVerifier::DEFAULT_FETCH_TIMEOUT.as_secs(), 5);
    /// ```
    pub const DEFAULT_FETCH_TIMEOUT: Duration = DEFAULT_TIMEOUT;
    /// The default [`max_response_bytes`](IntrospectionVerifierBuilder::max_response_bytes):
    /// 1 MiB.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::IntrospectionVerifier::DEFAULT_MAX_RESPONSE_BYTES, 1 << 20);
    /// ```
    pub const DEFAULT_MAX_RESPONSE_BYTES: usize = DEFAULT_MAX_RESPONSE_BYTES;
    /// The default [`leeway`](IntrospectionVerifierBuilder::leeway) on `exp` and `nbf`: 60 s.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::IntrospectionVerifier::DEFAULT_LEEWAY.as_secs(), 60);
    /// ```
    pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

    /// Starts the settings of a verifier that asks `endpoint` (the authorization server's
    /// `introspection_endpoint`).
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as.example/introspect");
    /// ```
    pub fn builder(endpoint: impl Into<String>) -> IntrospectionVerifierBuilder {
        IntrospectionVerifierBuilder {
            endpoint: endpoint.into(),
            credentials: None,
            audiences: Vec::new(),
            issuer: None,
            allow_missing_audience: false,
            leeway: Self::DEFAULT_LEEWAY,
            fetch_timeout: Self::DEFAULT_FETCH_TIMEOUT,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
            client: None,
        }
    }
}

impl IntrospectionVerifierBuilder {
    /// The client this server authenticates as (`client_secret_basic`). Required.
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .client_credentials("mcp-server", "s3cret");
    /// ```
    pub fn client_credentials(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        self.credentials = Some((client_id.into(), client_secret.into()));
        self
    }

    /// Accepts answers whose `aud` contains `audience` (this server's canonical URI). At
    /// least one is required; call it again to accept several.
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .audience("https://mcp.example.com/mcp");
    /// ```
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// Accepts each of `audiences`, as [`audience`](Self::audience) does.
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .audiences(["urn:a", "urn:b"]);
    /// ```
    pub fn audiences<I, S>(mut self, audiences: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.audiences.extend(audiences.into_iter().map(Into::into));
        self
    }

    /// Answers naming an `iss` must name this one; it is also the principal's issuer when
    /// the answer names none.
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .issuer("https://as");
    /// ```
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Accepts active answers that name no audience at all (some authorization servers
    /// omit `aud` when the token was not issued for a resource). Answers naming another
    /// audience are still refused.
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .allow_missing_audience();
    /// ```
    pub fn allow_missing_audience(mut self) -> Self {
        self.allow_missing_audience = true;
        self
    }

    /// The clock skew allowed on the answer's `exp` and `nbf` (default 60 s).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .leeway(Duration::ZERO);
    /// ```
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The timeout of one introspection request, the whole answer included (default 5 s).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .fetch_timeout(Duration::from_secs(2));
    /// ```
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// The largest introspection answer read (default 1 MiB).
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect")
    ///     .max_response_bytes(64 * 1024);
    /// ```
    pub fn max_response_bytes(mut self, limit: usize) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// The HTTP client for the endpoint (a custom CA, a proxy); as
    /// [`JwtVerifierBuilder::http_client`](super::JwtVerifierBuilder::http_client).
    ///
    /// ```
    /// let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    /// let _ = ferrymcp_core::auth::verify::IntrospectionVerifier::builder("https://as/introspect").http_client(client);
    /// ```
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Checks the settings.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{AuthConfigError, IntrospectionVerifier};
    /// let no_secret = IntrospectionVerifier::builder("https://as/introspect").audience("urn:me").build();
    /// assert_eq!(no_secret.unwrap_err(), AuthConfigError::NoClientCredentials);
    /// ```
    pub fn build(self) -> Result<IntrospectionVerifier, AuthConfigError> {
        let endpoint = parse_http_url(&self.endpoint, "introspection endpoint")?;
        let (client_id, secret) = self
            .credentials
            .ok_or(AuthConfigError::NoClientCredentials)?;
        if client_id.is_empty() {
            return Err(AuthConfigError::NoClientCredentials);
        }
        check_audiences(&self.audiences)?;
        if self.issuer.as_deref() == Some("") {
            return Err(AuthConfigError::EmptyIssuer);
        }
        let fetcher = Fetcher::new(self.client, self.fetch_timeout, self.max_response_bytes)?;
        // RFC 6749 §2.3.1: both parts are form-urlencoded before the Basic encoding.
        let encode =
            |part: &str| form_urlencoded::byte_serialize(part.as_bytes()).collect::<String>();
        let authorization = format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", encode(&client_id), encode(&secret)))
        );
        Ok(IntrospectionVerifier {
            inner: Arc::new(Inner {
                endpoint,
                client_id,
                authorization,
                audiences: super::jwt::with_canonical_forms(self.audiences),
                issuer: self.issuer,
                allow_missing_audience: self.allow_missing_audience,
                leeway: self.leeway,
                fetcher,
            }),
        })
    }
}

impl fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &redacted(&self.inner.endpoint))
            .field("client_id", &self.inner.client_id)
            .field("client_secret", &"<redacted>")
            .field("audiences", &self.inner.audiences)
            .field("issuer", &self.inner.issuer)
            .field("allow_missing_audience", &self.inner.allow_missing_audience)
            .finish()
    }
}

impl fmt::Debug for IntrospectionVerifierBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifierBuilder")
            .field("client_id", &self.credentials.as_ref().map(|(id, _)| id))
            .field("client_secret", &"<redacted>")
            .field("audiences", &self.audiences)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl TokenVerifier for IntrospectionVerifier {
    async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
        let inner = &self.inner;
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let request = inner
            .fetcher
            .client
            .post(inner.endpoint.clone())
            .header(http::header::AUTHORIZATION, &inner.authorization)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        let shown = || redacted(&inner.endpoint);
        let (status, body) = inner
            .fetcher
            .send(request, &inner.endpoint)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e.message(), "token introspection failed");
                VerifyError::Unavailable(e.message().to_owned())
            })?;
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(VerifyError::Unavailable(format!(
                "{} answered {status}",
                shown()
            )));
        }
        if status == StatusCode::UNAUTHORIZED {
            tracing::warn!(endpoint = %shown(), "the introspection endpoint refused this server's client credentials");
            return Err(VerifyError::Unavailable(format!(
                "{} refused this server's client credentials",
                shown()
            )));
        }
        if status.is_client_error() {
            return Err(VerifyError::Invalid(format!(
                "the authorization server refused to introspect the token ({status})"
            )));
        }
        if !status.is_success() {
            return Err(VerifyError::Unavailable(format!(
                "{} answered {status}",
                shown()
            )));
        }
        let answer: JsonObject = match serde_json::from_slice(&body) {
            Ok(Value::Object(answer)) => answer,
            _ => {
                return Err(VerifyError::Unavailable(format!(
                    "the answer of {} is not a JSON object",
                    shown()
                )));
            }
        };
        self.check(answer)
    }
}

impl IntrospectionVerifier {
    /// Checks an introspection answer.
    fn check(&self, mut answer: JsonObject) -> Result<Verified, VerifyError> {
        let inner = &self.inner;
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(VerifyError::Invalid("the token is not active".into()));
        }
        if let Some(issuer) = &inner.issuer {
            match answer.get("iss") {
                None => {
                    answer.insert("iss".into(), Value::String(issuer.clone()));
                }
                Some(Value::String(iss)) if iss == issuer => {}
                Some(_) => return Err(VerifyError::Invalid("unknown issuer".into())),
            }
        }
        let expires_at = check_times(&answer, SystemTime::now(), inner.leeway, false)?;
        if answer.contains_key("aud") || !inner.allow_missing_audience {
            check_audience(&answer, &inner.audiences)?;
        }
        check_identity(&answer)?;
        Ok(Verified {
            principal: principal_from_claims(answer),
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verifier(allow_missing: bool) -> IntrospectionVerifier {
        let b = IntrospectionVerifier::builder("http://127.0.0.1:9/introspect")
            .client_credentials("rs", "hunter2")
            .audience("https://mcp/mcp")
            .issuer("https://as");
        if allow_missing {
            b.allow_missing_audience()
        } else {
            b
        }
        .build()
        .unwrap()
    }

    fn answer(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn au12_an_active_answer_for_this_audience_gives_the_principal() {
        let verified = verifier(false)
            .check(answer(json!({"active": true, "aud": "https://mcp/mcp", "client_id": "app", "sub": "u", "scope": "a b", "exp": 4_000_000_000u64})))
            .unwrap();
        assert_eq!(verified.principal.client_id, "app");
        assert_eq!(verified.principal.issuer.as_deref(), Some("https://as"));
        assert_eq!(verified.principal.scopes, ["a", "b"]);
        assert!(verified.expires_at.is_some());
    }

    #[test]
    fn au12_inactive_other_audience_other_issuer_and_expired_answers_are_refused() {
        let v = verifier(false);
        let refused = |a: Value| match v.check(answer(a)) {
            Err(VerifyError::Invalid(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(refused(json!({"active": false})), "the token is not active");
        assert_eq!(
            refused(json!({"active": "true", "aud": "https://mcp/mcp"})),
            "the token is not active"
        );
        assert_eq!(
            refused(json!({"active": true, "aud": "https://other"})),
            "the token is for another audience"
        );
        assert_eq!(
            refused(json!({"active": true})),
            "the token has no audience (aud)"
        );
        assert_eq!(
            refused(json!({"active": true, "aud": "https://mcp/mcp", "iss": "https://evil"})),
            "unknown issuer"
        );
        assert_eq!(
            refused(json!({"active": true, "aud": "https://mcp/mcp", "exp": 1000})),
            "the token has expired"
        );
    }

    #[test]
    fn au12_allow_missing_audience_accepts_no_aud_but_not_another() {
        let v = verifier(true);
        // An answer naming no subject and no client is refused (AU16).
        assert!(v.check(answer(json!({"active": true}))).is_err());
        assert!(
            v.check(answer(json!({"active": true, "client_id": "app"})))
                .is_ok()
        );
        assert!(
            v.check(answer(
                json!({"active": true, "client_id": "app", "aud": "https://other"})
            ))
            .is_err()
        );
    }

    #[tokio::test]
    async fn au12_an_unreachable_endpoint_is_unavailable_and_the_secret_never_shows() {
        let v = verifier(false);
        let outcome = v.verify("opaque").await;
        let Err(VerifyError::Unavailable(message)) = &outcome else {
            panic!("{outcome:?}")
        };
        assert!(
            !message.contains("hunter2") && !message.contains("opaque"),
            "{message}"
        );
        assert!(!format!("{v:?}").contains("hunter2"));
    }
}
