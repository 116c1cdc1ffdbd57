//! [`JwtVerifier`]: JWT access tokens (RFC 9068) checked against the issuer's JWKS.

use std::{
    fmt,
    str::FromStr,
    sync::Arc,
    time::{Duration, SystemTime},
};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ferrymcp_types::JsonObject;
use jsonwebtoken::{Algorithm, AlgorithmFamily};
use serde_json::Value;

use super::{
    AuthConfigError, TokenVerifier, Verified, VerifyError,
    claims::{check_audience, check_identity, check_times, principal_from_claims},
    fetch::{DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, Fetcher, parse_http_url, redacted},
    jwks::{DEFAULT_MAX_AGE, DEFAULT_REFETCH_INTERVAL, Jwks, KeySource},
};

/// The algorithms accepted unless [`JwtVerifierBuilder::algorithms`] says otherwise.
const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Verifies JWT access tokens of one issuer: the signature with a key of the issuer's JWKS
/// (chosen by `kid`), `iss`, `aud` (one of this server's audiences), `exp` (required), `nbf`
/// and `iat` with a leeway, the algorithm against an allow-list (`none` and HMAC are never
/// accepted), and the header's `typ` (absent, `JWT`, `at+jwt` or `application/at+jwt`).
///
/// The keys come from the issuer's discovery document (RFC 8414's
/// `/.well-known/oauth-authorization-server`, then OpenID Connect's
/// `/.well-known/openid-configuration`, whose `issuer` must be the configured one), or from
/// a configured `jwks_uri`. They are cached: a token with an unknown `kid` makes the
/// verifier fetch them again, at most once per
/// [`refetch_interval`](JwtVerifierBuilder::refetch_interval) however many tokens ask, and
/// they are refreshed after [`key_max_age`](JwtVerifierBuilder::key_max_age). While the
/// authorization server cannot be reached, keys fetched before stay in use; with none yet,
/// tokens get [`VerifyError::Unavailable`].
///
/// Cloning is cheap and clones share the keys.
///
/// ```no_run
/// use ferrymcp_core::auth::verify::{JwtVerifier, TokenVerifier};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let verifier = JwtVerifier::builder("https://auth.example.com")
///     .audience("https://mcp.example.com/mcp")
///     .build()?;
/// let verified = verifier.verify("eyJhbGciOiJSUzI1NiIs...").await?;
/// println!("{} calls with {:?}", verified.principal.client_id, verified.principal.scopes);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    jwks: Jwks,
}

/// Settings of a [`JwtVerifier`]; [`build`](Self::build) checks them.
///
/// ```
/// use std::time::Duration;
/// use ferrymcp_core::auth::verify::JwtVerifier;
/// let verifier = JwtVerifier::builder("https://auth.example.com")
///     .audience("https://mcp.example.com/mcp")
///     .algorithms(["RS256", "ES256"])
///     .leeway(Duration::from_secs(30))
///     .build()
///     .unwrap();
/// assert_eq!(verifier.issuer(), "https://auth.example.com");
/// ```
#[must_use]
pub struct JwtVerifierBuilder {
    issuer: String,
    audiences: Vec<String>,
    jwks_uri: Option<String>,
    algorithms: Option<Vec<String>>,
    leeway: Duration,
    refetch_interval: Duration,
    key_max_age: Duration,
    fetch_timeout: Duration,
    max_response_bytes: usize,
    client: Option<reqwest::Client>,
}

impl JwtVerifier {
    /// The default [`leeway`](JwtVerifierBuilder::leeway) on `exp`, `nbf` and `iat`: 60 s.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::JwtVerifier::DEFAULT_LEEWAY.as_secs(), 60);
    /// ```
    pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);
    /// The default [`refetch_interval`](JwtVerifierBuilder::refetch_interval): 30 s.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::JwtVerifier::DEFAULT_REFETCH_INTERVAL.as_secs(), 30);
    /// ```
    pub const DEFAULT_REFETCH_INTERVAL: Duration = DEFAULT_REFETCH_INTERVAL;
    /// The default [`key_max_age`](JwtVerifierBuilder::key_max_age): 10 minutes.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::JwtVerifier::DEFAULT_KEY_MAX_AGE.as_secs(), 600);
    /// ```
    pub const DEFAULT_KEY_MAX_AGE: Duration = DEFAULT_MAX_AGE;
    /// The default [`fetch_timeout`](JwtVerifierBuilder::fetch_timeout): 5 s.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::JwtVerifier::DEFAULT_FETCH_TIMEOUT.as_secs(), 5);
    /// ```
    pub const DEFAULT_FETCH_TIMEOUT: Duration = DEFAULT_TIMEOUT;
    /// The default [`max_response_bytes`](JwtVerifierBuilder::max_response_bytes): 1 MiB.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::JwtVerifier::DEFAULT_MAX_RESPONSE_BYTES, 1 << 20);
    /// ```
    pub const DEFAULT_MAX_RESPONSE_BYTES: usize = DEFAULT_MAX_RESPONSE_BYTES;

    /// Starts the settings of a verifier for tokens issued by `issuer` (compared exactly
    /// with the tokens' `iss`).
    ///
    /// ```
    /// let builder = ferrymcp_core::auth::verify::JwtVerifier::builder("https://auth.example.com");
    /// # let _ = builder;
    /// ```
    pub fn builder(issuer: impl Into<String>) -> JwtVerifierBuilder {
        JwtVerifierBuilder {
            issuer: issuer.into(),
            audiences: Vec::new(),
            jwks_uri: None,
            algorithms: None,
            leeway: Self::DEFAULT_LEEWAY,
            refetch_interval: Self::DEFAULT_REFETCH_INTERVAL,
            key_max_age: Self::DEFAULT_KEY_MAX_AGE,
            fetch_timeout: Self::DEFAULT_FETCH_TIMEOUT,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
            client: None,
        }
    }

    /// The issuer whose tokens this verifier accepts.
    ///
    /// ```
    /// let v = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").audience("urn:me").build().unwrap();
    /// assert_eq!(v.issuer(), "https://as");
    /// ```
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The audiences a token may be for (one must be in its `aud`).
    ///
    /// ```
    /// let v = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").audience("urn:me").build().unwrap();
    /// assert_eq!(v.audiences(), ["urn:me"]);
    /// ```
    pub fn audiences(&self) -> &[String] {
        &self.inner.audiences
    }
}

impl JwtVerifierBuilder {
    /// Accepts tokens whose `aud` contains `audience` (this server's canonical URI, such as
    /// `https://mcp.example.com/mcp`, compared exactly; a URL given in another form, such as
    /// `HTTPS://mcp.example.com/mcp/`, also accepts its canonical form). At least one is
    /// required; call it again to accept several.
    ///
    /// ```
    /// let v = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as")
    ///     .audience("https://mcp.example.com/mcp")
    ///     .audience("https://mcp.example.com")
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(v.audiences().len(), 2);
    /// ```
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// Accepts each of `audiences`, as [`audience`](Self::audience) does.
    ///
    /// ```
    /// let v = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as")
    ///     .audiences(["urn:a", "urn:b"])
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(v.audiences(), ["urn:a", "urn:b"]);
    /// ```
    pub fn audiences<I, S>(mut self, audiences: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.audiences.extend(audiences.into_iter().map(Into::into));
        self
    }

    /// Fetches the keys from `uri` instead of the issuer's discovery document.
    ///
    /// ```
    /// let v = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as")
    ///     .audience("urn:me")
    ///     .jwks_uri("https://as/jwks")
    ///     .build();
    /// assert!(v.is_ok());
    /// ```
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.jwks_uri = Some(uri.into());
        self
    }

    /// The signature algorithms accepted, by their JOSE names (default: RS256, RS384,
    /// RS512, PS256, PS384, PS512, ES256, ES384, EdDSA). `none` and the HMAC algorithms
    /// (HS256, HS384, HS512) are refused by [`build`](Self::build).
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{AuthConfigError, JwtVerifier};
    /// let only_es = JwtVerifier::builder("https://as").audience("urn:me").algorithms(["ES256"]).build();
    /// assert!(only_es.is_ok());
    /// let hmac = JwtVerifier::builder("https://as").audience("urn:me").algorithms(["HS256"]).build();
    /// assert_eq!(hmac.unwrap_err(), AuthConfigError::RefusedAlgorithm("HS256".into()));
    /// ```
    pub fn algorithms<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.algorithms = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The clock skew allowed on `exp`, `nbf` and `iat` (default 60 s).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").leeway(Duration::ZERO);
    /// ```
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The shortest time between two fetches of the keys (default 30 s): a token with an
    /// unknown `kid` refetches them only when the last fetch is older than this, and a
    /// failed fetch is retried after it.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").refetch_interval(Duration::from_secs(5));
    /// ```
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// How long fetched keys are used before they are fetched again (default 10 minutes).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").key_max_age(Duration::from_secs(3600));
    /// ```
    pub fn key_max_age(mut self, max_age: Duration) -> Self {
        self.key_max_age = max_age;
        self
    }

    /// The timeout of one request to the authorization server, the whole answer included
    /// (default 5 s).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").fetch_timeout(Duration::from_secs(2));
    /// ```
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// The largest answer (discovery document, JWKS) read from the authorization server
    /// (default 1 MiB).
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").max_response_bytes(64 * 1024);
    /// ```
    pub fn max_response_bytes(mut self, limit: usize) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// The HTTP client for the authorization server (a custom CA, a proxy). Build it with
    /// `.redirect(reqwest::redirect::Policy::none())`: answers that redirect are refused
    /// either way. The default client follows no redirects and trusts the system's roots.
    ///
    /// ```
    /// let client = reqwest::Client::builder()
    ///     .redirect(reqwest::redirect::Policy::none())
    ///     .build()
    ///     .unwrap();
    /// let _ = ferrymcp_core::auth::verify::JwtVerifier::builder("https://as").http_client(client);
    /// ```
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Checks the settings.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{AuthConfigError, JwtVerifier};
    /// assert_eq!(JwtVerifier::builder("").audience("urn:me").build().unwrap_err(), AuthConfigError::EmptyIssuer);
    /// assert_eq!(JwtVerifier::builder("https://as").build().unwrap_err(), AuthConfigError::NoAudience);
    /// ```
    pub fn build(self) -> Result<JwtVerifier, AuthConfigError> {
        if self.issuer.is_empty() {
            return Err(AuthConfigError::EmptyIssuer);
        }
        check_audiences(&self.audiences)?;
        let algorithms = match &self.algorithms {
            None => DEFAULT_ALGORITHMS.to_vec(),
            Some(names) => parse_algorithms(names)?,
        };
        if self.refetch_interval.is_zero() {
            return Err(AuthConfigError::Zero("refetch_interval"));
        }
        if self.key_max_age.is_zero() {
            return Err(AuthConfigError::Zero("key_max_age"));
        }
        let source = match &self.jwks_uri {
            Some(uri) => KeySource::Jwks(parse_http_url(uri, "jwks_uri")?),
            None => KeySource::discovery(&self.issuer)?,
        };
        let fetcher = Fetcher::new(self.client, self.fetch_timeout, self.max_response_bytes)?;
        Ok(JwtVerifier {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                audiences: with_canonical_forms(self.audiences),
                algorithms,
                leeway: self.leeway,
                jwks: Jwks::new(source, fetcher, self.refetch_interval, self.key_max_age),
            }),
        })
    }
}

/// At least one audience, none empty.
pub(crate) fn check_audiences(audiences: &[String]) -> Result<(), AuthConfigError> {
    if audiences.is_empty() {
        return Err(AuthConfigError::NoAudience);
    }
    if audiences.iter().any(String::is_empty) {
        return Err(AuthConfigError::EmptyAudience);
    }
    Ok(())
}

/// `audiences`, each URL followed by its canonical form when that differs (a configured
/// `HTTP://host/mcp/` also accepts `http://host/mcp`, the URI the protected-resource metadata
/// advertises and clients ask their tokens for).
pub(crate) fn with_canonical_forms(audiences: Vec<String>) -> Vec<String> {
    let mut all = Vec::with_capacity(audiences.len());
    for audience in audiences {
        let canonical = crate::auth::resource_server::canonical_uri(&audience);
        all.push(audience);
        if let Some(canonical) = canonical
            && !all.contains(&canonical)
        {
            all.push(canonical);
        }
    }
    all
}

fn parse_algorithms(names: &[String]) -> Result<Vec<Algorithm>, AuthConfigError> {
    let mut algorithms = Vec::new();
    for name in names {
        if name.eq_ignore_ascii_case("none") || name.to_ascii_uppercase().starts_with("HS") {
            return Err(AuthConfigError::RefusedAlgorithm(name.clone()));
        }
        let alg = Algorithm::from_str(name)
            .map_err(|_| AuthConfigError::UnknownAlgorithm(name.clone()))?;
        if alg.family() == AlgorithmFamily::Hmac {
            return Err(AuthConfigError::RefusedAlgorithm(name.clone()));
        }
        if !algorithms.contains(&alg) {
            algorithms.push(alg);
        }
    }
    if algorithms.is_empty() {
        return Err(AuthConfigError::NoAlgorithm);
    }
    Ok(algorithms)
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = match self.inner.jwks.source() {
            KeySource::Jwks(uri) => redacted(uri),
            KeySource::Discovery { .. } => "discovery".to_owned(),
        };
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("algorithms", &self.inner.algorithms)
            .field("leeway", &self.inner.leeway)
            .field("keys", &keys)
            .finish()
    }
}

impl fmt::Debug for JwtVerifierBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifierBuilder")
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .finish_non_exhaustive()
    }
}

/// A token split into its parts, its header and claims decoded (nothing verified yet).
pub(crate) struct Parsed<'t> {
    pub(crate) header: JsonObject,
    pub(crate) claims: JsonObject,
    /// `header.payload`, the signed bytes.
    signed: &'t str,
    signature: &'t str,
}

impl<'t> Parsed<'t> {
    /// `None` when `token` is not a JWS in compact form with JSON header and claims.
    pub(crate) fn new(token: &'t str) -> Option<Self> {
        let (signed, signature) = token.rsplit_once('.')?;
        let (header, claims) = signed.split_once('.')?;
        if claims.contains('.') {
            return None;
        }
        Some(Self {
            header: decode_object(header)?,
            claims: decode_object(claims)?,
            signed,
            signature,
        })
    }

    /// The (unverified) issuer.
    pub(crate) fn issuer(&self) -> Option<&str> {
        self.claims.get("iss").and_then(Value::as_str)
    }
}

fn decode_object(part: &str) -> Option<JsonObject> {
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

fn invalid(message: impl Into<String>) -> VerifyError {
    VerifyError::Invalid(message.into())
}

impl JwtVerifier {
    /// The algorithm of the header, if accepted.
    fn algorithm(&self, header: &JsonObject) -> Result<Algorithm, VerifyError> {
        let name = header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("the token's header names no algorithm (alg)"))?;
        if name.eq_ignore_ascii_case("none") {
            return Err(invalid("algorithm none is not accepted"));
        }
        let refused = || invalid(format!("algorithm {name} is not accepted"));
        let alg = Algorithm::from_str(name).map_err(|_| refused())?;
        if alg.family() == AlgorithmFamily::Hmac || !self.inner.algorithms.contains(&alg) {
            return Err(refused());
        }
        Ok(alg)
    }

    /// Checks a parsed token; the signature last, since it may need the network.
    pub(crate) async fn verify_parsed(&self, parsed: Parsed<'_>) -> Result<Verified, VerifyError> {
        let header = &parsed.header;
        let alg = self.algorithm(header)?;
        match header.get("typ") {
            None => {}
            Some(Value::String(typ))
                if ["JWT", "at+jwt", "application/at+jwt"]
                    .iter()
                    .any(|ok| typ.eq_ignore_ascii_case(ok)) => {}
            Some(_) => return Err(invalid("the token's type (typ) is not an access token")),
        }
        if header.contains_key("crit") {
            return Err(invalid(
                "the token has critical header parameters (crit), which are not supported",
            ));
        }
        let claims = &parsed.claims;
        match claims.get("iss").and_then(Value::as_str) {
            None => return Err(invalid("the token has no issuer (iss)")),
            Some(iss) if iss != self.inner.issuer => return Err(invalid("unknown issuer")),
            Some(_) => {}
        }
        let expires_at = check_times(claims, SystemTime::now(), self.inner.leeway, true)?;
        check_audience(claims, &self.inner.audiences)?;
        check_identity(claims)?;

        let kid = header.get("kid").and_then(Value::as_str);
        let set = self.inner.jwks.keys_for(kid).await?;
        let mut fitting = set
            .keys
            .iter()
            .filter(|key| kid.is_none_or(|kid| key.kid.as_deref() == Some(kid)))
            .peekable();
        if kid.is_some() && fitting.peek().is_none() {
            return Err(invalid("no key of the issuer has the token's key id (kid)"));
        }
        let mut fitting = fitting.filter(|key| key.fits(alg)).peekable();
        if fitting.peek().is_none() {
            return Err(invalid(format!(
                "no key of the issuer is for algorithm {alg:?}"
            )));
        }
        let verifies = fitting.any(|key| {
            jsonwebtoken::crypto::verify(parsed.signature, parsed.signed.as_bytes(), &key.key, alg)
                .unwrap_or(false)
        });
        if !verifies {
            return Err(invalid("the signature does not verify"));
        }
        Ok(Verified {
            principal: principal_from_claims(parsed.claims),
            expires_at,
        })
    }
}

#[async_trait::async_trait]
impl TokenVerifier for JwtVerifier {
    async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
        let parsed = Parsed::new(token).ok_or_else(|| invalid("the token is not a JWT"))?;
        self.verify_parsed(parsed).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> JwtVerifier {
        JwtVerifier::builder("https://as.example")
            .audience("https://mcp.example/mcp")
            .jwks_uri("http://127.0.0.1:9/jwks")
            .build()
            .unwrap()
    }

    fn token(header: Value, claims: Value) -> String {
        let part = |v: Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(&v).unwrap());
        format!("{}.{}.c2ln", part(header), part(claims))
    }

    fn valid_claims() -> Value {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        serde_json::json!({"iss": "https://as.example", "aud": "https://mcp.example/mcp", "exp": now + 600, "sub": "s"})
    }

    async fn refused(header: Value, claims: Value) -> String {
        match verifier().verify(&token(header, claims)).await {
            Err(VerifyError::Invalid(message)) => message,
            other => panic!("not refused as invalid: {other:?}"),
        }
    }

    #[test]
    fn au10_the_builder_refuses_bad_settings() {
        let b = || JwtVerifier::builder("https://as").audience("urn:me");
        assert_eq!(
            JwtVerifier::builder("https://as")
                .audience("")
                .build()
                .unwrap_err(),
            AuthConfigError::EmptyAudience
        );
        for refused in ["none", "HS256", "hs512"] {
            assert_eq!(
                b().algorithms([refused]).build().unwrap_err(),
                AuthConfigError::RefusedAlgorithm(refused.into())
            );
        }
        assert!(matches!(
            b().algorithms(["ES512"]).build(),
            Err(AuthConfigError::UnknownAlgorithm(_))
        ));
        assert_eq!(
            b().algorithms(Vec::<String>::new()).build().unwrap_err(),
            AuthConfigError::NoAlgorithm
        );
        assert!(matches!(
            b().jwks_uri("ftp://x").build(),
            Err(AuthConfigError::InvalidUrl { .. })
        ));
        assert!(matches!(
            JwtVerifier::builder("not-a-url").audience("urn:me").build(),
            Err(AuthConfigError::InvalidUrl { what: "issuer", .. })
        ));
        assert!(
            JwtVerifier::builder("urn:issuer")
                .audience("urn:me")
                .jwks_uri("https://as/jwks")
                .build()
                .is_ok()
        );
        assert_eq!(
            b().refetch_interval(Duration::ZERO).build().unwrap_err(),
            AuthConfigError::Zero("refetch_interval")
        );
        assert_eq!(
            b().fetch_timeout(Duration::ZERO).build().unwrap_err(),
            AuthConfigError::Zero("fetch_timeout")
        );
        assert_eq!(
            b().max_response_bytes(0).build().unwrap_err(),
            AuthConfigError::Zero("max_response_bytes")
        );
    }

    #[tokio::test]
    async fn au10_header_checks_refuse_before_any_key_is_fetched() {
        let claims = valid_claims;
        assert_eq!(
            refused(serde_json::json!({"alg": "none"}), claims()).await,
            "algorithm none is not accepted"
        );
        assert_eq!(
            refused(serde_json::json!({"alg": "HS256"}), claims()).await,
            "algorithm HS256 is not accepted"
        );
        assert_eq!(
            refused(serde_json::json!({"alg": "XYZ"}), claims()).await,
            "algorithm XYZ is not accepted"
        );
        assert_eq!(
            refused(serde_json::json!({"typ": "JWT"}), claims()).await,
            "the token's header names no algorithm (alg)"
        );
        assert_eq!(
            refused(
                serde_json::json!({"alg": "RS256", "typ": "dpop+jwt"}),
                claims()
            )
            .await,
            "the token's type (typ) is not an access token"
        );
        assert!(
            refused(
                serde_json::json!({"alg": "RS256", "crit": ["b64"]}),
                claims()
            )
            .await
            .contains("crit")
        );
    }

    #[tokio::test]
    async fn au10_claim_checks_refuse_before_any_key_is_fetched() {
        let h = || serde_json::json!({"alg": "RS256", "typ": "at+jwt", "kid": "k"});
        let mut other_issuer = valid_claims();
        other_issuer["iss"] = "https://evil.example".into();
        assert_eq!(refused(h(), other_issuer).await, "unknown issuer");
        let mut other_audience = valid_claims();
        other_audience["aud"] = serde_json::json!(["https://other.example/mcp"]);
        assert_eq!(
            refused(h(), other_audience).await,
            "the token is for another audience"
        );
        let mut expired = valid_claims();
        expired["exp"] = 1_000_000.into();
        assert_eq!(refused(h(), expired).await, "the token has expired");
        let mut no_exp = valid_claims();
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(refused(h(), no_exp).await, "the token has no expiry (exp)");
    }

    #[tokio::test]
    async fn au10_garbage_is_not_a_jwt() {
        for garbage in [
            "",
            "abc",
            "a.b",
            "a.b.c",
            "a.b.c.d",
            "...",
            "eyJhbGciOiJSUzI1NiJ9.e30",
        ] {
            assert_eq!(
                verifier().verify(garbage).await,
                Err(VerifyError::Invalid("the token is not a JWT".into())),
                "{garbage:?}"
            );
        }
    }

    #[tokio::test]
    async fn au10_an_unreachable_jwks_without_cached_keys_is_unavailable() {
        let outcome = verifier()
            .verify(&token(serde_json::json!({"alg": "RS256"}), valid_claims()))
            .await;
        assert!(
            matches!(outcome, Err(VerifyError::Unavailable(_))),
            "{outcome:?}"
        );
    }
}
