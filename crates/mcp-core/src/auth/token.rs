//! [`BearerToken`]: the caller's raw access token, for the rare tool that must present it.

use std::{fmt, sync::Arc};

/// The raw access token the request came with. The resource server puts it into the
/// request's extensions next to the [`Principal`](crate::auth::Principal); a tool gets it
/// only by asking for it as a parameter. `Debug` never shows it.
///
/// ```
/// use ferrymcp_core::auth::BearerToken;
/// let token = BearerToken::new("eyJhbGciOi...");
/// assert_eq!(token.expose(), "eyJhbGciOi...");
/// assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(Arc<str>);

impl BearerToken {
    /// Wraps a token.
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::BearerToken::new("t");
    /// ```
    pub fn new(token: impl Into<String>) -> Self {
        Self(Arc::from(token.into()))
    }

    /// The token itself. Never log it, and never send it to another server: an upstream
    /// call needs a token of its own (token exchange).
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::BearerToken::new("t").expose(), "t");
    /// ```
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}
