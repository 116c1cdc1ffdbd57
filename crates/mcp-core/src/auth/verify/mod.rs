//! Verifying access tokens: the [`TokenVerifier`] trait and the verifiers that come with
//! the `auth` feature.
//!
//! - [`JwtVerifier`]: JWT access tokens of one issuer, checked against its published keys
//!   (JWKS, found through its discovery document), its `iss`, this server's audience, the
//!   times and an algorithm allow-list.
//! - [`IntrospectionVerifier`]: opaque tokens, asked about at the authorization server
//!   (RFC 7662).
//! - [`Issuers`]: several issuers (and opaque-token verifiers) in one server.
//! - [`CachedVerifier`]: remembers verified tokens until they expire, so a repeated token
//!   costs a lookup.
//!
//! ```no_run
//! use ferrymcp_core::auth::verify::{CachedVerifier, JwtVerifier, TokenVerifier};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Tokens issued by this authorization server for this MCP server (its canonical URI).
//! let verifier = CachedVerifier::new(
//!     JwtVerifier::builder("https://auth.example.com")
//!         .audience("https://mcp.example.com/mcp")
//!         .build()?,
//! );
//! let verified = verifier.verify("eyJhbGciOiJSUzI1NiIs...").await?;
//! println!("{:?} as {}", verified.principal.subject, verified.principal.client_id);
//! # Ok(()) }
//! ```

use std::{sync::Arc, time::SystemTime};

use crate::auth::Principal;

mod cache;
mod claims;
mod error;
mod fetch;
mod introspection;
mod issuers;
mod jwks;
mod jwt;

pub use cache::{CacheLimits, CachedVerifier};
pub use claims::{audience_accepted, principal_from_claims};
pub use error::AuthConfigError;
pub use introspection::{IntrospectionVerifier, IntrospectionVerifierBuilder};
pub use issuers::{Issuers, IssuersBuilder};
pub use jwt::{JwtVerifier, JwtVerifierBuilder};

/// What a verifier learned from a valid token.
///
/// ```
/// use ferrymcp_core::auth::{Principal, verify::Verified};
/// let verified = Verified { principal: Principal::new("app"), expires_at: None };
/// assert_eq!(verified.principal.client_id, "app");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The caller the token stands for.
    pub principal: Principal,
    /// When the token stops being valid (`exp`); `None` when it does not say.
    pub expires_at: Option<SystemTime>,
}

/// Why a token was not accepted. Messages never contain the token.
///
/// ```
/// use ferrymcp_core::auth::verify::VerifyError;
/// let e = VerifyError::Invalid("the token has expired".into());
/// assert_eq!(e.to_string(), "invalid token: the token has expired");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The token is not valid for this server (bad signature, expired, not yet valid,
    /// wrong issuer or audience, inactive, malformed): the client gets 401
    /// `invalid_token`.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token could not be checked now (the authorization server's keys or its
    /// introspection endpoint could not be reached): the client gets 503 and may retry.
    #[error("token verification unavailable: {0}")]
    Unavailable(String),
}

/// Turns a bearer token into a [`Verified`] principal. The `auth` feature brings a JWT
/// verifier (JWKS), an introspection verifier (RFC 7662), one for several issuers and a
/// cache; implement this trait for anything else.
///
/// ```
/// use ferrymcp_core::auth::{Principal, verify::{TokenVerifier, Verified, VerifyError}};
///
/// /// Accepts one static token (for tests).
/// struct Static;
/// #[async_trait::async_trait]
/// impl TokenVerifier for Static {
///     async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
///         match token {
///             "let-me-in" => Ok(Verified { principal: Principal::new("tests"), expires_at: None }),
///             _ => Err(VerifyError::Invalid("unknown token".into())),
///         }
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the part after `Bearer `).
    async fn verify(&self, token: &str) -> Result<Verified, VerifyError>;
}

/// A shared verifier verifies as the one it points to.
///
/// ```
/// use std::sync::Arc;
/// use ferrymcp_core::auth::verify::{JwtVerifier, TokenVerifier};
/// let shared: Arc<dyn TokenVerifier> =
///     Arc::new(JwtVerifier::builder("https://as").audience("urn:me").build().unwrap());
/// fn needs(_: impl TokenVerifier) {}
/// needs(shared);
/// ```
#[async_trait::async_trait]
impl<T: TokenVerifier + ?Sized> TokenVerifier for Arc<T> {
    async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
        (**self).verify(token).await
    }
}
