//! [`AuthConfigError`]: a verifier's settings that its builder refuses.

/// A setting a verifier's builder refuses. Messages never contain secrets (client secrets,
/// passwords in URLs).
///
/// ```
/// use ferrymcp_core::auth::verify::{AuthConfigError, JwtVerifier};
/// let refused = JwtVerifier::builder("https://as.example").build();
/// assert_eq!(refused.unwrap_err(), AuthConfigError::NoAudience);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// The issuer is empty.
    #[error("the issuer is empty")]
    EmptyIssuer,
    /// No audience was given: a resource server must check that tokens were issued for it.
    #[error(
        "no audience was given; name this server's canonical URI (the token's aud must contain it)"
    )]
    NoAudience,
    /// An audience that is the empty string.
    #[error("an audience is empty")]
    EmptyAudience,
    /// A URL (issuer, JWKS, introspection endpoint) that is not an `http` or `https` URL.
    #[error("the {what} is not an http or https URL: {reason}")]
    InvalidUrl {
        /// Which URL.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An algorithm that is never accepted (`none`, or an HMAC algorithm, whose key would
    /// have to be a secret shared with every resource server).
    #[error("algorithm {0} is never accepted for access tokens")]
    RefusedAlgorithm(String),
    /// An algorithm name this verifier does not know.
    #[error(
        "unknown algorithm {0:?}; known: RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA"
    )]
    UnknownAlgorithm(String),
    /// The algorithm allow-list is empty.
    #[error("the algorithm list is empty, which would refuse every token")]
    NoAlgorithm,
    /// Introspection needs client credentials (RFC 7662 requires the caller to authenticate).
    #[error("introspection needs client credentials (client_credentials(id, secret))")]
    NoClientCredentials,
    /// Two verifiers for the same issuer.
    #[error("issuer {0:?} is configured twice")]
    DuplicateIssuer(String),
    /// A set of issuers with no verifier at all.
    #[error("no verifier was configured")]
    NoVerifier,
    /// A limit or timeout set to zero, which would refuse everything.
    #[error("{0} must be greater than zero")]
    Zero(&'static str),
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    HttpClient(String),
}
